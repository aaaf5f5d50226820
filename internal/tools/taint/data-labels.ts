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

/**
 * The labels table, read through a cache of the live labels.
 *
 * CACHE INVARIANT (why a cached read never misses a label): the cache is the result of one SELECT
 * of the live labels, kept only while nothing could have changed the table since:
 * - this connection's writes ({@link add}, {@link clear}) drop it, after the statement ran;
 * - another connection's commits (the CLI clears labels from another process) change SQLite's
 *   `PRAGMA data_version`, which is read before every use and drops it when it moved;
 * - a write made inside a transaction may still be rolled back, which neither of the above sees:
 *   until a read outside any transaction, reads go to SQLite and are not kept.
 * So every read sees what a fresh SELECT would see; a cached read costs one pragma instead of a
 * sorted query and a JSON parse of every row (issue 44's bookkeeping cost).
 */
export class DataLabels {
  private s;
  /** The live labels by kind, oldest first, as of `version`; undefined: read SQLite next time. */
  private cache: Map<LabelKind, readonly DataLabel[]> | undefined;
  private version = -1;
  /** A write happened inside a transaction that has not been seen to end yet. */
  private uncommitted = false;

  constructor(
    private db: Db,
    private now: () => number,
  ) {
    this.s = {
      insert: db.prepare(
        "INSERT OR IGNORE INTO data_labels (kind, key, session_id, sources, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      // Every live label at once, sorted here: one unsorted scan is several times cheaper in SQLite
      // than a sorted, parameterised query per kind.
      live: db.prepare<[], Row>("SELECT * FROM data_labels WHERE cleared_at IS NULL"),
      clear: db.prepare(
        "UPDATE data_labels SET cleared_at = ? WHERE kind = ? AND key = ? AND cleared_at IS NULL",
      ),
      version: db.prepare<[], number>("PRAGMA data_version").pluck(),
    };
  }

  /** Labels `key` with the taint of `sessionId` (one row per thing and writer). */
  add(kind: LabelKind, key: string, sessionId: string, sources: readonly TaintSource[]): void {
    const k = kind === "file" ? labelPath(key) : key;
    if (!k || sources.length === 0) return;
    try {
      this.s.insert.run(kind, k, sessionId, JSON.stringify(sources.slice(-20)), this.now());
    } finally {
      this.dropCache();
    }
  }

  private dropCache(): void {
    this.cache = undefined;
    if (this.db.inTransaction) this.uncommitted = true;
  }

  /**
   * Every live label of a kind, oldest first. The array is shared with the cache and stays the same
   * object until the labels change, so a caller may cache what it derives from it by identity.
   */
  list(kind: LabelKind): readonly DataLabel[] {
    if (this.uncommitted) {
      if (this.db.inTransaction) return this.load().get(kind) ?? [];
      this.uncommitted = false;
      this.cache = undefined;
    }
    const version = this.s.version.get() ?? 0;
    if (!this.cache || version !== this.version) {
      this.cache = this.load();
      this.version = version;
    }
    return this.cache.get(kind) ?? [];
  }

  /** The live labels from SQLite, by kind, oldest first. */
  private load(): Map<LabelKind, readonly DataLabel[]> {
    const byKind = new Map<LabelKind, DataLabel[]>([
      ["file", []],
      ["job", []],
    ]);
    for (const r of this.s.live.all()) byKind.get(r.kind as LabelKind)?.push(toLabel(r));
    for (const l of byKind.values()) l.sort((a, b) => a.id - b.id);
    return byKind;
  }

  /** Live labels on `key` (for files: on it or on a folder above it). */
  on(kind: LabelKind, key: string): DataLabel[] {
    const all = this.list(kind);
    if (all.length === 0) return [];
    if (kind !== "file") return all.filter((l) => l.key === key);
    const p = labelPath(key).toLowerCase();
    return all.filter((l) => {
      const k = l.key.toLowerCase();
      return p === k || p.startsWith(`${k}/`);
    });
  }

  /** Clears every label on `key` (the owner vouched for it, or its tainted content was removed). */
  clear(kind: LabelKind, key: string): number {
    try {
      return Number(this.s.clear.run(this.now(), kind, kind === "file" ? labelPath(key) : key).changes);
    } finally {
      this.dropCache();
    }
  }
}
