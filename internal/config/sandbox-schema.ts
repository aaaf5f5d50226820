/**
 * The sandbox's resource keys beyond the per-process limits (merged into `tools.exec.sandbox` in
 * internal/config/schema.ts): the size of its RAM-backed `/tmp`, the memory of a command's processes
 * together, and the workspace's disk budget. Documented in internal/config/config-template.yaml and docs/tools.md.
 */
import { z } from "zod";
import { HOLD_CATEGORIES } from "../workspace/desk-rules.js";

export const sandboxResourceKeys = {
  /** Size of the private `/tmp` (and `/dev/shm`) in MB; RAM, so small by default. */
  tmp_mb: z.number().int().min(1).default(512),
  /**
   * Memory of one command's processes together, `/tmp` included, in MB (a cgroup where the machine
   * allows one; otherwise only the per-process `memory_mb` and `tmp_mb` apply).
   */
  total_memory_mb: z.number().int().min(64).default(4096),
  /** Largest size of the workspace in MB; 0 = no budget. Over it, exec refuses with a clear error. */
  workspace_disk_mb: z.number().int().min(0).default(0),
  /**
   * What may appear on the desk without a question (docs/security.md, "The desk fails closed"):
   * categories (`code`, `packages`, ...) or folder names (`node_modules`, `.venv`). Nothing by default.
   */
  desk_allow: z
    .array(
      z
        .string()
        .min(1)
        .refine((s) => !/[\\/]/.test(s) && s !== "." && s !== "..", {
          error: `expected a category (${HOLD_CATEGORIES.join(", ")}) or a folder name without a slash`,
        }),
    )
    .default([]),
};
