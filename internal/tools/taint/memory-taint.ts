/**
 * Memory written by a tainted turn: allowed, but tagged with the taint so the owner can list and
 * purge it (`familiar memory tainted [purge]`). What taints a reader is the FILE's label
 * (data-labels.ts, by path): an entry's text is kept here only to find it again for a purge.
 *
 * Invariants:
 * - a tag records the entry's text as `memory_write` wrote it and the sources of the turn;
 * - purging removes the entry's lines from the file (matched by text, never by line number: the
 *   owner may have edited the file since) and marks the tag purged; the file's label is cleared only
 *   when every tainted entry of it was found and removed, so an edited entry keeps the file labelled;
 * - memory files are workspace files, which a sandboxed command can replace with a symlink: they are
 *   read without following a link (MEMORY.md) and rewritten only through `openBeneath`, never
 *   outside the workspace.
 */
import { openBeneath } from "../safe-open.js";
import type { Db } from "../../store/db.js";
import type { TaintSource } from "../../core/taint.js";
import type { DataLabels } from "./data-labels.js";

/** A tagged memory entry. */
export interface TaintedMemory {
  id: number;
  /** Workspace-relative file (`MEMORY.md`, `memory/2026-11-25.md`). */
  path: string;
  text: string;
  sessionId: string;
  sources: TaintSource[];
  createdAt: number;
  purgedAt: number | null;
}

interface Row {
  id: number;
  path: string;
  text: string;
  session_id: string;
  sources: string;
  created_at: number;
  purged_at: number | null;
}

function toEntry(r: Row): TaintedMemory {
  let sources: TaintSource[] = [];
  try {
    sources = JSON.parse(r.sources) as TaintSource[];
  } catch {
    /* a damaged row still lists and purges */
  }
  return {
    id: r.id,
    path: r.path,
    text: r.text,
    sessionId: r.session_id,
    sources,
    createdAt: r.created_at,
    purgedAt: r.purged_at,
  };
}

/** The form `memory_write` stores text in (continuation lines indented). */
export function storedForm(text: string): string {
  return text.trim().replace(/\r\n/g, "\n").replace(/\n/g, "\n  ");
}

export class MemoryTaint {
  private s;

  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.s = {
      insert: db.prepare(
        "INSERT INTO memory_taint (path, text, session_id, sources, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      live: db.prepare<[], Row>("SELECT * FROM memory_taint WHERE purged_at IS NULL ORDER BY id"),
      all: db.prepare<[], Row>("SELECT * FROM memory_taint ORDER BY id"),
      purge: db.prepare("UPDATE memory_taint SET purged_at = ? WHERE id = ? AND purged_at IS NULL"),
    };
  }

  /** Tags an entry just written by a tainted turn. */
  tag(path: string, text: string, sessionId: string, sources: readonly TaintSource[]): void {
    this.s.insert.run(path, storedForm(text), sessionId, JSON.stringify(sources), this.now());
  }

  /** Unpurged tags (`all`: purged ones too). */
  list(all = false): TaintedMemory[] {
    return (all ? this.s.all.all() : this.s.live.all()).map(toEntry);
  }

  /**
   * Removes entries from their files and marks them purged (`ids` undefined: every live one).
   * Returns what was purged, with whether the text was still found in its file.
   */
  async purge(
    workspace: string,
    ids?: readonly number[],
    labels?: DataLabels,
  ): Promise<{ entry: TaintedMemory; removed: boolean }[]> {
    const out: { entry: TaintedMemory; removed: boolean }[] = [];
    for (const e of this.list()) {
      if (ids && !ids.includes(e.id)) continue;
      let removed = false;
      try {
        const { handle } = await openBeneath(workspace, e.path, { mode: "rw" });
        try {
          const body = await handle.readFile("utf8");
          const next = removeEntry(body, e.text);
          if (next !== body) {
            await handle.truncate(0);
            await handle.write(next, 0, "utf8");
            removed = true;
          }
        } finally {
          await handle.close();
        }
      } catch {
        /* gone, or a link out of the workspace: nothing of ours to remove */
      }
      this.s.purge.run(this.now(), e.id);
      out.push({ entry: e, removed });
    }
    // A file's label goes only when none of its tainted entries is left in it.
    const left = new Set(this.list().map((e) => e.path));
    for (const path of new Set(out.map((d) => d.entry.path)))
      if (out.every((d) => d.entry.path !== path || d.removed) && !left.has(path))
        labels?.clear("file", path);
    return out;
  }
}

/** The body without the first list entry (`- ...` plus its indented continuation) containing `text`. */
export function removeEntry(body: string, text: string): string {
  const lines = body.split("\n");
  const first = text.split("\n")[0] ?? text;
  const at = lines.findIndex((l) => l.startsWith("- ") && l.includes(first));
  if (at < 0) return body;
  let end = at + 1;
  while (end < lines.length && lines[end]?.startsWith("  ")) end++;
  lines.splice(at, end - at);
  return lines.join("\n");
}
