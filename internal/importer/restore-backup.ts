/**
 * `familiar restore` with the backup read as hostile input (docs/backup.md, "What is trusted"):
 * the store checks the files (no link, nothing outside the backup, checksums: store/restore.ts);
 * this module writes the workspace through the daemon's door, decides the database rows that grant
 * power (restore-rows.ts), and asks before a backup's config.yaml becomes the instance's.
 *
 * Invariant: {@link checkRestore} writes nothing (it is `familiar restore --check`); what
 * {@link runRestore} brings back is exactly what the check said, for the same accepted keys.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfigText } from "../config/load.js";
import { BackupError, type BackupManifest } from "../store/backup.js";
import { restoreBackup, verifyBackup, type RestoreResult, type RestoreTarget } from "../store/restore.js";
import {
  listWorkspaceDirSync,
  readWorkspaceBytesSync,
  writeWorkspaceFileSync,
} from "../workspace/workspace-door.js";
import type { Consent } from "./consent.js";
import { checkBackupRows, filterRestoredDb, type RowDecision } from "./restore-rows.js";
import { placeholderEnv } from "./target.js";

/** Largest workspace file a restore copies (media included). */
const MAX_RESTORE_FILE = 1024 * 1024 * 1024;

/** What a restore of this backup would do. */
export interface RestoreCheck {
  dir: string;
  manifest: BackupManifest;
  rows: RowDecision[];
  /** The backup's config.yaml, when the target has none: taken only when `config` is accepted. */
  config?: { status: "confirm" | "accepted"; why: string };
}

/**
 * Checks a backup without writing anything: its files (BackupError when any is a link, leaves the
 * backup or fails its checksum), its rows, and whether its config would be taken.
 */
export function checkRestore(dir: string, consent: Consent, targetHasConfig: boolean): RestoreCheck {
  const manifest = verifyBackup(dir);
  const rows = checkBackupRows(join(dir, "familiar.db"), consent);
  const check: RestoreCheck = { dir, manifest, rows };
  if (!targetHasConfig && manifest.files.some((f) => f.path === "config.yaml")) {
    const text = readFileSync(join(dir, "config.yaml"), "utf8");
    try {
      parseConfigText(text, join(dir, "config.yaml"), placeholderEnv(text));
    } catch (err) {
      throw new BackupError(
        "BACKUP_MANIFEST",
        `the backup's config.yaml is not valid: ${(err as Error).message}`,
      );
    }
    check.config = {
      status: consent.accepts("config") ? "accepted" : "confirm",
      why: "it decides the programs, tools, channels, keys and paths of the instance",
    };
  }
  return check;
}

/** Copies `<backup>/workspace` into the new workspace, reading and writing through the door. */
export function copyBackupWorkspace(backupDir: string, workspace: string): void {
  mkdirSync(workspace, { recursive: true, mode: 0o700 });
  const walk = (rel: string): void => {
    for (const e of listWorkspaceDirSync(backupDir, rel)) {
      const p = `${rel}/${e.name}`;
      if (e.kind === "dir") walk(p);
      else if (e.kind !== "file")
        throw new BackupError("BACKUP_UNSAFE", `${p} in ${backupDir} is a ${e.kind}, not a file: refused`);
      else {
        const b = readWorkspaceBytesSync(backupDir, p, { maxBytes: MAX_RESTORE_FILE });
        if (b) writeWorkspaceFileSync(workspace, p.slice("workspace/".length), b.data);
      }
    }
  };
  walk("workspace");
}

/** Restores what {@link checkRestore} allowed; the rows it left out are deleted from the copy. */
export function runRestore(check: RestoreCheck, t: RestoreTarget): RestoreResult {
  return restoreBackup(check.dir, t, new Date(), {
    copyWorkspace: copyBackupWorkspace,
    filterDb: (db) => filterRestoredDb(db, check.rows),
  });
}

/** The check as text: what comes back with the owner's yes, what waits for it, what is refused. */
export function formatRestoreCheck(c: RestoreCheck, unmatched: string[]): string {
  const lines: string[] = [];
  const line = (mark: string, key: string, what: string, why: string): string =>
    `  ${mark} [${key}] ${what}: ${why}`;
  const accepted = c.rows.filter((r) => r.status === "accepted");
  const ask = c.rows.filter((r) => r.status === "confirm");
  const refused = c.rows.filter((r) => r.status === "refused");
  if (c.config?.status === "accepted" || accepted.length > 0)
    lines.push(
      "Accepted (grants power):",
      ...(c.config?.status === "accepted"
        ? [line("+", "config", "the backup's config.yaml", c.config.why)]
        : []),
      ...accepted.map((r) => line("+", r.key, r.what, r.why)),
    );
  if (c.config?.status === "confirm" || ask.length > 0)
    lines.push(
      "Needs your confirmation (left out; grants power):",
      ...(c.config?.status === "confirm"
        ? [line("?", "config", "the backup's config.yaml", c.config.why)]
        : []),
      ...ask.map((r) => line("?", r.key, r.what, r.why)),
      "  To take some: --accept KEY,KEY (a KEY ending in * takes all it starts); all: --accept-all-risky",
    );
  if (refused.length > 0)
    lines.push("Refused (never restored):", ...refused.map((r) => line("!", r.key, r.what, r.why)));
  for (const k of unmatched) lines.push(`note: --accept ${k} matched nothing in this backup`);
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}
