/**
 * The owner's private files kept out of a turn that is not the owner's alone (a group chat, a
 * non-owner's DM; docs/security.md, "Only the owner answers"): USER.md and MEMORY.md stay out of the
 * prompt (prompt.ts), and no tool of the turn reaches them.
 *
 * Decided by layout, as an allow-list: such a turn may use only the top-level workspace entries in
 * {@link SHARED_VISIBLE} (skills/ and the prompt files its own prompt includes) and a desk of its own,
 * `desk/shared/<chat>/` ({@link sharedDeskOf}), where its commands run. Anything else (USER.md,
 * MEMORY.md, memory/, HEARTBEAT.md, inbox/, the owner's own folders, what the owner's conversations
 * left on the desk, another chat's desk, a file added tomorrow) is out of its reach without being
 * named here.
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
import { createHash } from "node:crypto";
import { posix } from "node:path";
import type { ToolSpec } from "../models/types.js";
import type { ToolContext, ToolSet, WithheldView } from "../tools/tool.js";
import { listWorkspaceDirSync } from "../workspace/workspace-door.js";

/** Workspace files the prompt of a shared chat leaves out. */
export const PRIVATE_PROMPT_FILES: ReadonlySet<string> = new Set(["USER.md", "MEMORY.md"]);

/**
 * The top-level workspace entries a shared turn may use (exact names: the file system tells `skills`
 * from `Skills`): the skills it may run and the prompt files its prompt already shows. Of the desk it
 * sees only its own folder ({@link sharedDeskOf}).
 */
export const SHARED_VISIBLE: ReadonlySet<string> = new Set([
  "skills",
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "TOOLS.md",
]);

const PRIVATE_TOOLS = new Set(["memory_search", "memory_write"]);
const FILE_TOOLS = new Set(["read_file", "edit_file", "write_file", "list_dir", "send_file"]);

/** Where the shared chats' desks live, inside the desk. */
export const SHARED_DESKS = "shared";

/**
 * The workspace-relative desk of the shared chat whose session key is `sessionKey`: a safe file name
 * (its readable part plus a hash of the whole key, so two keys never share one folder).
 */
export function sharedDeskOf(sessionKey: string): string {
  const readable = sessionKey
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+/, "")
    .slice(0, 48);
  const hash = createHash("sha256").update(sessionKey).digest("hex").slice(0, 10);
  return `desk/${SHARED_DESKS}/${readable}-${hash}`;
}

/** A workspace-relative path normalised into its components (`./desk//x` -> [desk, x]; root -> []). */
function partsOf(rel: string): string[] {
  const r = posix
    .normalize(rel.replace(/\\/g, "/"))
    .replace(/^(\.\/)+/, "")
    .replace(/^\/+/, "")
    .replace(/\/+$/, "");
  return r === "." || r === "" ? [] : r.split("/");
}

/**
 * True when a shared turn whose desk is `desk` may use the workspace-relative path: the workspace
 * root, `desk` and `desk/shared` themselves (a listing shows only what it may use), anything in its
 * own desk, or under an allowed top-level entry.
 */
export function sharedMayUse(rel: string, desk: string): boolean {
  const parts = partsOf(rel);
  if (parts.includes("..")) return false;
  if (parts.length === 0) return true;
  const own = desk.split("/");
  if (parts[0] === own[0]) return own.every((p, i) => i >= parts.length || parts[i] === p);
  return SHARED_VISIBLE.has(parts[0]!);
}

/**
 * What a shared turn's command must not see (read now: a new file is hidden too): every top-level
 * entry but the allowed ones, every desk entry but the shared desks, and every other chat's desk.
 */
export function sharedHidden(workspace: string, desk: string): string[] {
  // A link is not masked (the sandbox masks real files and folders); inside the sandbox it leads to
  // its target, which is judged by its own place: hidden, allowed, or not bound at all.
  const own = desk.split("/");
  const out: string[] = [];
  let dir = "";
  for (let i = 0; i < own.length; i++) {
    const keep = own[i]!;
    const names = listWorkspaceDirSync(workspace, dir === "" ? "." : dir).map((e) => e.name);
    for (const n of names) {
      if (n === keep || (i === 0 && SHARED_VISIBLE.has(n))) continue;
      out.push(dir === "" ? n : `${dir}/${n}`);
    }
    dir = dir === "" ? keep : `${dir}/${keep}`;
  }
  return out;
}

/** The refusal a shared turn's model gets; it names why and how the owner can allow it. */
export const PRIVATE_REFUSAL =
  "refused: this chat is not the owner's alone (a group, or someone other than the owner), so the owner's private files (USER.md, MEMORY.md, memory/, memory search, what the owner's conversations left on the desk, and the rest of the workspace outside this chat's desk and skills/) are not available here. The owner can allow it for this chat with channels.<name>.private_context in config.yaml.";

/** The view of the workspace the shared chat of `sessionKey` gets (see the module invariants). */
export function sharedView(workspace: string, sessionKey: string): WithheldView {
  const desk = sharedDeskOf(sessionKey);
  const why = `${PRIVATE_REFUSAL} This chat's own desk is ${desk}/ (where its commands run).`;
  return {
    refusal: (rel) => (sharedMayUse(rel, desk) ? undefined : why),
    hidden: () => sharedHidden(workspace, desk),
    desk,
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
        const withheld = sharedView(ctx.workspace, ctx.sessionKey);
        const why = rel === undefined ? PRIVATE_REFUSAL : withheld.refusal(rel);
        if (why !== undefined) return { isError: true, content: why };
      }
      // The tools themselves check what they really open and what a command sees.
      const view: ToolContext = { ...ctx, withheld: sharedView(ctx.workspace, ctx.sessionKey) };
      return inner.execute(call, signal, view);
    },
  };
}
