/**
 * The record of the last backup (`kv` key `backup.last`): written by `familiar backup` and the
 * scheduled backup, read by `status` (the console's overview shows it).
 */
import type { Db } from "./db.js";
import { KvNamespace } from "./kv.js";

export interface LastBackup {
  at: number;
  ok: boolean;
  /** The snapshot's directory, when it succeeded. */
  dir: string | null;
  bytes: number;
  error: string | null;
  trigger: "manual" | "schedule" | "migration";
}

const KEY = "last";

/** Records a backup's outcome. Best effort: a db that cannot take the write does not fail the backup. */
export function recordLastBackup(db: Db, b: LastBackup): void {
  try {
    new KvNamespace(db, "backup.").set(KEY, JSON.stringify(b));
  } catch {
    /* the snapshot itself is what matters */
  }
}

/** The last backup's outcome, or null when none was recorded. */
export function readLastBackup(db: Db): LastBackup | null {
  try {
    const v = new KvNamespace(db, "backup.").get(KEY);
    return v ? (JSON.parse(v) as LastBackup) : null;
  } catch {
    return null;
  }
}
