/**
 * The owner's private files kept out of a turn that is not the owner's alone (a group chat, a
 * non-owner's DM; docs/security.md, "Only the owner answers"): USER.md and MEMORY.md stay out of the
 * prompt (prompt.ts), and the tools that read them refuse.
 *
 * Invariants:
 * - `memory_search` is neither offered nor run;
 * - `read_file` / `edit_file` / `write_file` of USER.md, MEMORY.md or anything under memory/ is
 *   refused before the tool runs (what the owner keeps there would otherwise reach the chat);
 * - every other call passes through unchanged.
 */
import { posix } from "node:path";
import type { ToolSpec } from "../models/types.js";
import type { ToolSet } from "../tools/tool.js";

/** Workspace files the prompt of a shared chat leaves out. */
export const PRIVATE_PROMPT_FILES: ReadonlySet<string> = new Set(["USER.md", "MEMORY.md"]);

const PRIVATE_TOOLS = new Set(["memory_search"]);
const FILE_TOOLS = new Set(["read_file", "edit_file", "write_file"]);

/** True when a workspace-relative path names a private file (USER.md, MEMORY.md, memory/...). */
export function isPrivatePath(p: string): boolean {
  // `memory/../MEMORY.md`, `./USER.md`, `//memory/x`: normalised before the check.
  const r = posix
    .normalize(p.replace(/\\/g, "/"))
    .replace(/^(\.\/)+/, "")
    .replace(/^\/+/, "")
    .toLowerCase();
  return r === "user.md" || r === "memory.md" || r === "memory" || r.startsWith("memory/");
}

function pathArg(raw: string): string | undefined {
  try {
    const v = (JSON.parse(raw) as Record<string, unknown>).path;
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

const REFUSAL =
  "refused: this chat is not the owner's alone (a group, or someone other than the owner), so the owner's private files (USER.md, MEMORY.md, memory/ and memory search) are not available here. The owner can allow it for this chat with channels.<name>.private_context in config.yaml.";

/**
 * One filtered array per array of an inner set (which stays the same until its tools change), kept
 * across turns: what is derived from a spec array by identity (its serialized JSON in the request
 * body) is then not redone for every call of a shared chat.
 */
const filtered = new WeakMap<ToolSpec[], ToolSpec[]>();

/** The tool set without the owner's private files (see the module invariants). */
export function withoutPrivate(inner: ToolSet, workspace: string): ToolSet {
  const names = inner.names?.bind(inner);
  const ws = workspace.replace(/\\/g, "/").replace(/\/+$/, "") + "/";
  return {
    specs: (loaded) => {
      const all = inner.specs(loaded);
      let out = filtered.get(all);
      if (!out) filtered.set(all, (out = all.filter((s) => !PRIVATE_TOOLS.has(s.name))));
      return out;
    },
    ...(names ? { names: () => names().filter((n) => !PRIVATE_TOOLS.has(n)) } : {}),
    execute: async (call, signal, ctx) => {
      if (PRIVATE_TOOLS.has(call.name)) return { isError: true, content: REFUSAL };
      if (FILE_TOOLS.has(call.name)) {
        const raw = pathArg(call.arguments);
        // An unreadable argument of a file tool is refused: classification fails closed.
        const rel = raw === undefined ? undefined : raw.replace(/\\/g, "/").replace(ws, "");
        if (rel === undefined || isPrivatePath(rel)) return { isError: true, content: REFUSAL };
      }
      return inner.execute(call, signal, ctx);
    },
  };
}
