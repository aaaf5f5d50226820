/**
 * `memory.entries`: what the assistant remembers, for the console's Memory view: the facts of
 * MEMORY.md and the dated notes of memory/YYYY-MM-DD.md, one entry per bullet, each with its file and
 * line and, when a stored `memory_write` call wrote that text, the turn that wrote it.
 *
 * `memory.edit` / `memory.forget` change or remove one entry for the owner.
 *
 * Invariants: every file is read and written through the workspace door
 * (internal/workspace/workspace-door.ts: no link followed, regular files only, capped, no hard-linked
 * file written), because the sandbox can write the workspace; only MEMORY.md and memory/YYYY-MM-DD.md
 * are ever written, and only when the entry still reads what the owner saw. Reachable only after an
 * authenticated `connect`, like every method.
 */
import { isWorkspaceError } from "../workspace/workspace-error.js";
import {
  listWorkspaceDirSync,
  readWorkspaceFileSync,
  rewriteWorkspaceFileSync,
} from "../workspace/workspace-door.js";
import type { Db } from "../store/db.js";

/** Note files read (the newest); older days stay on disk and in `memory_search`. */
const MAX_NOTE_FILES = 90;
const MAX_FILE_BYTES = 512 * 1024;

export interface MemoryOrigin {
  request_id: string | null;
  session_id: string;
  at: number;
}
export interface MemoryEntry {
  kind: "fact" | "note";
  file: string;
  line: number;
  /** The day of the note (its file), or the date a fact carries at its end. */
  date: string | null;
  text: string;
  origin: MemoryOrigin | null;
}

/** Bullets of a memory file ("- text", continuation lines indented), with their first line. */
function bullets(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  text.split("\n").forEach((l, i) => {
    if (/^[-*]\s+/.test(l)) out.push({ line: i + 1, text: l.replace(/^[-*]\s+/, "") });
    else if (/^\s{2,}\S/.test(l) && out.length) out[out.length - 1]!.text += "\n" + l.trim();
  });
  return out;
}

/** memory_write calls stored in transcripts, by the text they saved (newest wins). */
function writers(db: Db): Map<string, MemoryOrigin> {
  const rows = db
    .prepare<[], { tool_calls: string; request_id: string | null; session_id: string; created_at: number }>(
      `SELECT tool_calls, request_id, session_id, created_at FROM messages
       WHERE role = 'assistant' AND tool_calls LIKE '%memory_write%' ORDER BY id DESC LIMIT 2000`,
    )
    .all();
  const map = new Map<string, MemoryOrigin>();
  for (const r of rows) {
    let calls: { name?: string; arguments?: string }[] = [];
    try {
      calls = JSON.parse(r.tool_calls) as typeof calls;
    } catch {
      continue;
    }
    for (const c of calls) {
      if (c.name !== "memory_write" || typeof c.arguments !== "string") continue;
      try {
        const a = JSON.parse(c.arguments) as { text?: unknown };
        const t = typeof a.text === "string" ? a.text.trim() : "";
        if (t && !map.has(t))
          map.set(t, { request_id: r.request_id, session_id: r.session_id, at: r.created_at });
      } catch {
        /* arguments the model garbled: no origin for them */
      }
    }
  }
  return map;
}

/** Reads the memory files through the door; a refused file is reported, never followed. */
export function memoryEntries(db: Db, root: string): { entries: MemoryEntry[]; refused: string[] } {
  const refused: string[] = [];
  const read = (rel: string): string | undefined => {
    try {
      return readWorkspaceFileSync(root, rel, { maxBytes: MAX_FILE_BYTES })?.text;
    } catch (err) {
      if (!isWorkspaceError(err)) throw err;
      refused.push(`${rel}: ${err.message}`);
      return undefined;
    }
  };
  const origins = writers(db);
  const entries: MemoryEntry[] = [];
  const add = (kind: MemoryEntry["kind"], file: string, day: string | null, text: string): void => {
    for (const b of bullets(text)) {
      // Notes start with the time ("- 14:05 text"); facts end with their date ("text (2026-11-25)").
      const note = kind === "note" ? /^(\d{2}:\d{2})\s+([\s\S]*)$/.exec(b.text) : null;
      const fact = kind === "fact" ? /^([\s\S]*?)\s+\((\d{4}-\d{2}-\d{2})\)$/.exec(b.text) : null;
      const body = (note?.[2] ?? fact?.[1] ?? b.text).trim();
      const date = fact?.[2] ?? (day ? `${day}${note ? " " + note[1] : ""}` : null);
      const key = body.replace(/\n {2}/g, "\n");
      entries.push({
        kind,
        file,
        line: b.line,
        date,
        text: body,
        origin: origins.get(key) ?? origins.get(body) ?? null,
      });
    }
  };
  let names: string[];
  try {
    names = listWorkspaceDirSync(root, "")
      .filter((e) => e.kind === "file")
      .map((e) => e.name);
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    return { entries, refused: [err.message] };
  }
  const top = listWorkspaceDirSync(root, "").filter((e) => /^memory\.md$/i.test(e.name) && e.kind !== "file");
  for (const e of top) refused.push(`${e.name}: a ${e.kind}, not a regular file; not read`);
  const factFile = names.includes("MEMORY.md")
    ? "MEMORY.md"
    : names.includes("memory.md")
      ? "memory.md"
      : null;
  if (factFile) {
    const t = read(factFile);
    if (t !== undefined) add("fact", factFile, null, t);
  }
  let days: string[] = [];
  try {
    const found = listWorkspaceDirSync(root, "memory").filter((e) => /^\d{4}-\d{2}-\d{2}\.md$/.test(e.name));
    // A link or anything but a regular file is named to the owner, never opened.
    for (const e of found)
      if (e.kind !== "file") refused.push(`memory/${e.name}: a ${e.kind}, not a regular file; not read`);
    days = found
      .filter((e) => e.kind === "file")
      .map((e) => e.name)
      .sort()
      .reverse()
      .slice(0, MAX_NOTE_FILES);
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    refused.push(`memory/: ${err.message}`);
  }
  for (const d of days) {
    const t = read(`memory/${d}`);
    if (t !== undefined) add("note", `memory/${d}`, d.slice(0, 10), t);
  }
  return { entries, refused };
}

/** The memory files an owner may change: the fact file and dated note files, nothing else. */
const EDITABLE = /^(MEMORY\.md|memory\.md|memory\/\d{4}-\d{2}-\d{2}\.md)$/;

/** A conflict or a bad request, with the reason for the owner. */
export class MemoryEditError extends Error {
  constructor(
    readonly code: "invalid_params" | "conflict",
    message: string,
  ) {
    super(message);
  }
}

/**
 * Changes one entry (`replacement`) or forgets it (`replacement` null): the bullet at `line` of
 * `file`, which must still read `text` (else the file changed since the owner loaded it: a conflict,
 * nothing written). A note keeps its time, a fact its date. Written through the workspace door.
 */
export function editMemoryEntry(
  root: string,
  edit: { file: string; line: number; text: string; replacement: string | null },
): void {
  if (!EDITABLE.test(edit.file))
    throw new MemoryEditError(
      "invalid_params",
      `file must be MEMORY.md or memory/YYYY-MM-DD.md; got ${JSON.stringify(edit.file)}`,
    );
  const kind = edit.file.startsWith("memory/") ? "note" : "fact";
  const repl = edit.replacement?.trim().replace(/\r\n/g, "\n");
  if (repl === "")
    throw new MemoryEditError("invalid_params", "replacement must not be empty (forget the entry instead)");
  rewriteWorkspaceFileSync(root, edit.file, (text) => {
    const lines = text.split("\n");
    const i = edit.line - 1;
    if (!/^[-*]\s+/.test(lines[i] ?? ""))
      throw new MemoryEditError(
        "conflict",
        `${edit.file}:${edit.line} is no longer an entry; reload the memory view`,
      );
    let end = i + 1;
    while (end < lines.length && /^\s{2,}\S/.test(lines[end]!)) end++;
    const raw = [lines[i]!.replace(/^[-*]\s+/, ""), ...lines.slice(i + 1, end).map((l) => l.trim())].join(
      "\n",
    );
    const note = kind === "note" ? /^(\d{2}:\d{2})\s+([\s\S]*)$/.exec(raw) : null;
    const fact = kind === "fact" ? /^([\s\S]*?)\s+\((\d{4}-\d{2}-\d{2})\)$/.exec(raw) : null;
    const body = (note?.[2] ?? fact?.[1] ?? raw).trim();
    if (body !== edit.text)
      throw new MemoryEditError(
        "conflict",
        `${edit.file}:${edit.line} changed since it was loaded; reload the memory view`,
      );
    const next =
      repl === undefined
        ? []
        : [`- ${note ? note[1] + " " : ""}${repl.replace(/\n/g, "\n  ")}${fact ? ` (${fact[2]})` : ""}`];
    return [...lines.slice(0, i), ...next, ...lines.slice(end)].join("\n");
  });
}
