/**
 * The `disk` section of config.yaml (merged into the one schema in internal/config/schema.ts): when
 * the owner is told that the disk holding the data dir (the database) is nearly full. Low when free
 * space falls under EITHER threshold. Documented in internal/config/config-template.yaml and docs/configuration.md.
 */
import { z } from "zod";
import { durationSchema } from "./schema-parts.js";

export const diskSchema = z
  .object({
    /** Low below this many MB free. */
    warn_free_mb: z.number().int().min(0).default(1024),
    /** Low below this percentage of the disk free. */
    warn_free_percent: z.number().min(0).max(100).default(5),
    /** How often the free space is read. */
    check_every: durationSchema.prefault("1m"),
  })
  .strict()
  .prefault({});

export type DiskConfig = z.infer<typeof diskSchema>;
