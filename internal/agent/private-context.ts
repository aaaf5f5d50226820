/**
 * The owner's private files kept out of a turn that is not the owner's alone (a group chat, a
 * non-owner's DM; docs/security.md, "Only the owner answers"): USER.md and MEMORY.md stay out of the
 * prompt (prompt.ts), and no tool of the turn reaches them.
 *
 * Decided by layout, as an allow-list: such a turn may use only the top-level workspace entries in
 * {@link SHARED_VISIBLE} (the desk, skills/, and the prompt files its own prompt includes). Anything
 * else at the top (USER.md, MEMORY.md, memory/, HEARTBEAT.md, inbox/, the owner's own folders, a file
 * added tomorrow) is out of its reach without being named here.
 *
 * Invariants:
 * - `memory_search` and `memory_write` are neither offered nor run;
 * - the file tools (`read_file`, `write_file`, `edit_file`, `list_dir`, `send_file`) refuse a path
 *   outside the allow-list, both as given and as really opened (a desk symlink to ../MEMORY.md is
 *   refused by the tool that would follow it);
 * - a sandboxed command gets every other top-level entry masked (files read as empty, folders
 *   empty); without the sandbox a command is refused;
 * - every other call passes through unchanged.
 */
import { posix } from "node:path";
import type { ToolSpec } from "../models/types.js";
import type { ToolContext, ToolSet, WithheldView } from "../tools/tool.js";
import { listWorkspaceDirSync } from "../workspace/workspace-door.js";

/** Workspace files the prompt of a shared chat leaves out. */
export const PRIVATE_PROMPT_FILES: ReadonlySet<string> = new Set(["USER.md", "MEMORY.md"]);

/**
 * The top-level workspace entries a shared turn may use (exact names: the file system tells `desk`
 * from `Desk`): the desk, the skills it may run, and the prompt files its prompt already shows.
 */
export const SHARED_VISIBLE: ReadonlySet<string> = new Set([
  "desk",
  "skills",
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "TOOLS.md",
]);

const PRIVATE_TOOLS = new Set(["memory_search", "memory_write"]);
const FILE_TOOLS = new Set(["read_file", "edit_file", "write_file", "list_dir", "send_file"]);

/** The first component of a workspace-relative path, normalised (`./desk//x` -> `desk`; root -> ""). */
function topOf(rel: string): string {
  const r = posix
    .normalize(rel.replace(/\\/g, "/"))
    .replace(/^(\.\/)+/, "")
    .replace(/^\/+/, "");
  if (r === "." || r === "") return "";
  return r.split("/")[0] ?? "";
}

/**
 * True when a shared turn may use the workspace-relative path: the workspace root itself (a listing
 * shows only what it may use) or anything under an allowed top-level entry.
 */
export function sharedMayUse(rel: string): boolean {
  const top = topOf(rel);
  return top === "" || (top !== ".." && SHARED_VISIBLE.has(top));
}

/** The top-level entries of the workspace a shared turn must not see (read now: a new file is hidden too). */
export function sharedHidden(workspace: string): string[] {
  // A top-level link is not masked (the sandbox masks real files and folders); inside the sandbox
  // it leads to its target, which is judged by its own place: hidden, allowed, or not bound at all.
  return listWorkspaceDirSync(workspace, ".")
    .map((e) => e.name)
    .filter((n) => !SHARED_VISIBLE.has(n));
}

/** The refusal a shared turn's model gets; it names why and how the owner can allow it. */
export const PRIVATE_REFUSAL =
  "refused: this chat is not the owner's alone (a group, or someone other than the owner), so the owner's private files (USER.md, MEMORY.md, memory/, memory search and the rest of the workspace outside desk/ and skills/) are not available here. The owner can allow it for this chat with channels.<name>.private_context in config.yaml.";

/** The view of the workspace a shared turn gets (see the module invariants). */
export function sharedView(workspace: string): WithheldView {
  return {
    refusal: (rel) => (sharedMayUse(rel) ? undefined : PRIVATE_REFUSAL),
    hidden: () => sharedHidden(workspace),
  };
}

function pathArg(raw: string): string | undefined {
  try {
    const v = (JSON.parse(raw) as Record<string, unknown>).path;
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

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
      if (PRIVATE_TOOLS.has(call.name)) return { isError: true, content: PRIVATE_REFUSAL };
      if (FILE_TOOLS.has(call.name)) {
        const raw = pathArg(call.arguments) ?? (call.name === "list_dir" ? "." : undefined);
        // An unreadable argument of a file tool is refused: classification fails closed.
        const given = raw?.replace(/\\/g, "/");
        const rel = given === undefined ? undefined : given === ws.slice(0, -1) ? "." : given.replace(ws, "");
        if (rel === undefined || !sharedMayUse(rel)) return { isError: true, content: PRIVATE_REFUSAL };
      }
      // The tools themselves check what they really open and what a command sees.
      const view: ToolContext = { ...ctx, withheld: sharedView(ctx.workspace) };
      return inner.execute(call, signal, view);
    },
  };
}
