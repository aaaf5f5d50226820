/**
 * Labels that live with the data (issue 44; docs/security.md, "Labels follow the data"): what a
 * tainted session wrote carries that session's taint, stored in SQLite beside it and keyed by the
 * thing's IDENTITY (a workspace-relative path, a cron job's id), never by its text. Editing,
 * quoting, snippeting, searching or summarising the content cannot drop the label; only the owner
 * clears it (`familiar memory tainted clear`, or a purge that removed every tainted entry).
 *
 * INVARIANTS
 * - a label is added whenever a tainted writer changes the thing, and never removed by a writer;
 * - reading a labelled thing taints the reader, whatever tool reads it: the reading tools say what
 *   they read by identity (`ToolResult.reads`), and a clean session's commands do not see labelled
 *   files at all (they are masked in its sandbox), so reading them needs a tool that taints;
 * - paths are stored normalised (`/`-separated, no `./`, no trailing `/`); a folder's label covers
 *   everything beneath it.
 */
import type { Db } from "../../store/db.js";
import type { TaintSource } from "../../core/taint.js";

/** What a label is on. */
export type LabelKind = "file" | "job";

/** One live label. */
export interface DataLabel {
  id: number;
  kind: LabelKind;
  key: string;
  /** The session whose taint it carries. */
  sessionId: string;
  sources: TaintSource[];
  createdAt: number;
}

interface Row {
  id: number;
  kind: string;
  key: string;
  session_id: string;
  sources: string;
  created_at: number;
}

/** The stored form of a workspace-relative path. */
export function labelPath(p: string): string {
  return p
    .replace(/\\/g, "/")
    .split("/")
    .filter((x) => x && x !== ".")
    .join("/");
}

function toLabel(r: Row): DataLabel {
  let sources: TaintSource[] = [];
  try {
    sources = JSON.parse(r.sources) as TaintSource[];
  } catch {
    /* a damaged row still labels */
  }
  return {
    id: r.id,
    kind: r.kind as LabelKind,
    key: r.key,
    sessionId: r.session_id,
    sources,
    createdAt: r.created_at,
  };
}

/** The labels table. Every query reads SQLite (the CLI clears labels from another process). */
export class DataLabels {
  private s;

  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.s = {
      insert: db.prepare(
        "INSERT OR IGNORE INTO data_labels (kind, key, session_id, sources, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      ofKind: db.prepare<[string], Row>(
        "SELECT * FROM data_labels WHERE kind = ? AND cleared_at IS NULL ORDER BY id",
      ),
      clear: db.prepare(
        "UPDATE data_labels SET cleared_at = ? WHERE kind = ? AND key = ? AND cleared_at IS NULL",
      ),
      any: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM data_labels WHERE cleared_at IS NULL"),
    };
  }

  /** Labels `key` with the taint of `sessionId` (one row per thing and writer). */
  add(kind: LabelKind, key: string, sessionId: string, sources: readonly TaintSource[]): void {
    const k = kind === "file" ? labelPath(key) : key;
    if (!k || sources.length === 0) return;
    this.s.insert.run(kind, k, sessionId, JSON.stringify(sources.slice(-20)), this.now());
  }

  /** Every live label of a kind. */
  list(kind: LabelKind): DataLabel[] {
    return this.s.ofKind.all(kind).map(toLabel);
  }

  /** Live labels on `key` (for files: on it or on a folder above it). */
  on(kind: LabelKind, key: string): DataLabel[] {
    if (this.s.any.get()?.n === 0) return [];
    if (kind !== "file") return this.list(kind).filter((l) => l.key === key);
    const p = labelPath(key).toLowerCase();
    return this.list("file").filter((l) => {
      const k = l.key.toLowerCase();
      return p === k || p.startsWith(`${k}/`);
    });
  }

  /** Clears every label on `key` (the owner vouched for it, or its tainted content was removed). */
  clear(kind: LabelKind, key: string): number {
    return Number(this.s.clear.run(this.now(), kind, kind === "file" ? labelPath(key) : key).changes);
  }
}
