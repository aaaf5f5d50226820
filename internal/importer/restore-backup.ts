/**
 * `familiar restore` with the backup read as hostile input (docs/backup.md, "Whose backup it is"):
 * the store checks the files (no link, nothing outside the backup, checksums: store/restore.ts);
 * this module copies the database and config.yaml through the workspace door (door-copy.ts), writes
 * the workspace through it leaving out what the desk would hold (restore-workspace.ts), decides the
 * database rows that grant power (restore-rows.ts), and asks before a backup's config.yaml becomes
 * the instance's. A backup signed with this installation's key (store/backup-key.ts) is its own: its
 * powers and held files are taken without asking, rows still validated one by one.
 *
 * Invariant: {@link checkRestore} writes nothing in the target (it is `familiar restore --check`;
 * the rows are read from a private copy in the temp dir, removed after); what {@link runRestore}
 * brings back is exactly what the check said, for the same accepted keys.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfigText } from "../config/load.js";
import { BackupError, type BackupManifest } from "../store/backup.js";
import { checkSignature, type SignatureCheck } from "../store/backup-key.js";
import { inspectBackup, restoreBackup, type RestoreResult, type RestoreTarget } from "../store/restore.js";
import { copyFileOutSync, type CopiedFile } from "../workspace/door-copy.js";
import { readWorkspaceBytesSync } from "../workspace/workspace-door.js";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { Consent } from "./consent.js";
import { checkBackupRows, filterRestoredDb, type RowDecision } from "./restore-rows.js";
import { copyBackupWorkspace, planBackupWorkspace, type HeldFile } from "./restore-workspace.js";
import { placeholderEnv } from "./target.js";
import { visibleLine } from "../core/visible-text.js";

/** What a restore of this backup would do. */
export interface RestoreCheck {
  dir: string;
  manifest: BackupManifest;
  /**
   * Whose backup it is: `own` when signed with this installation's key (backup-key.ts): its powers
   * come back without asking, each row still validated; else they are asked.
   */
  origin: SignatureCheck;
  rows: RowDecision[];
  /** Workspace files the desk would hold (restore-workspace.ts). */
  held: HeldFile[];
  /** The backup's config.yaml, when the target has none: taken only when `config` is accepted. */
  config?: { status: "confirm" | "accepted"; why: string };
}

/**
 * Copies the backup's `rel` to the new file `dest` through the workspace door (no link followed at
 * any step, a regular file once open); a refusal is a BackupError naming the file.
 */
export function copyFromBackup(backupDir: string, rel: string, dest: string): CopiedFile {
  try {
    return copyFileOutSync(backupDir, rel, dest);
  } catch (err) {
    if (isWorkspaceError(err))
      throw new BackupError("BACKUP_UNSAFE", `${rel} in ${backupDir}: ${err.message}: refused`);
    throw err;
  }
}

/**
 * Checks a backup without writing anything in the target: its files (BackupError when any is a link,
 * leaves the backup or fails its checksum), its signature against `key` (this installation's, when
 * it has one), its rows (read from a private copy held to the manifest, so the rows judged are the
 * rows restored), the workspace files the desk would hold, and whether its config would be taken.
 */
export function checkRestore(
  dir: string,
  flags: Consent,
  targetHasConfig: boolean,
  key?: Buffer,
): RestoreCheck {
  const inspected = inspectBackup(dir);
  const manifest = inspected.manifest;
  const origin = checkSignature(inspected.manifestBytes, inspected.signature, key);
  // This installation's own backup: what it grants was the owner's already.
  const consent = origin === "own" ? new Consent([], true) : flags;
  const rows = checkedRows(dir, manifest, consent);
  const held = planBackupWorkspace(dir, consent);
  const check: RestoreCheck = { dir, manifest, origin, rows, held };
  if (!targetHasConfig && manifest.files.some((f) => f.path === "config.yaml")) {
    const text = readWorkspaceBytesSync(dir, "config.yaml")?.data.toString("utf8") ?? "";
    try {
      parseConfigText(text, join(dir, "config.yaml"), placeholderEnv(text));
    } catch (err) {
      throw new BackupError(
        "BACKUP_MANIFEST",
        `the backup's config.yaml is not valid: ${(err as Error).message}`,
      );
    }
    check.config = {
      status: flags.accepts("config") ? "accepted" : "confirm",
      why: "it decides the programs, tools, channels, keys and paths of the instance",
    };
  }
  return check;
}

function checkedRows(dir: string, manifest: BackupManifest, consent: Consent): RowDecision[] {
  const tmp = mkdtempSync(join(tmpdir(), "familiar-restore-check-"));
  try {
    const copy = join(tmp, "familiar.db");
    const got = copyFromBackup(dir, "familiar.db", copy);
    const want = manifest.files.find((f) => f.path === "familiar.db");
    if (got.sha256 !== want?.sha256)
      throw new BackupError("BACKUP_CHECKSUM", `familiar.db in ${dir} changed while it was checked: refused`);
    return checkBackupRows(copy, consent);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Writes the backup's config.yaml as the new file `configFile` (held to the manifest's sha256). */
export function writeBackupConfig(check: RestoreCheck, configFile: string): void {
  const want = check.manifest.files.find((f) => f.path === "config.yaml");
  const got = copyFromBackup(check.dir, "config.yaml", configFile);
  if (got.sha256 !== want?.sha256) {
    rmSync(configFile, { force: true });
    throw new BackupError(
      "BACKUP_CHECKSUM",
      `config.yaml in ${check.dir} changed after it was checked: refused`,
    );
  }
}

/** Restores what {@link checkRestore} allowed; the rows it left out are deleted from the copy. */
export function runRestore(check: RestoreCheck, t: RestoreTarget): RestoreResult {
  return restoreBackup(check.dir, t, new Date(), {
    copyFile: copyFromBackup,
    copyWorkspace: (dir, ws) => copyBackupWorkspace(dir, ws, check.held),
    filterDb: (db) => filterRestoredDb(db, check.rows),
  });
}

/** The check as text: what comes back with the owner's yes, what waits for it, what is refused. */
export function formatRestoreCheck(c: RestoreCheck, unmatched: string[]): string {
  const lines: string[] = [];
  const line = (mark: string, key: string, what: string, why: string): string =>
    `  ${mark} [${key}] ${visibleLine(what)}: ${why}`;
  lines.push(
    c.origin === "own"
      ? "This installation's own backup (signed with its key): its powers come back, each row still checked."
      : c.origin === "foreign"
        ? "Not this installation's backup (its signature does not match this installation's key): its powers are asked."
        : "An unsigned backup (not known as this installation's own): its powers are asked.",
  );
  const heldOut = c.held.filter((h) => h.status === "held");
  const heldIn = c.held.filter((h) => h.status === "accepted");
  const accepted = c.rows.filter((r) => r.status === "accepted");
  const ask = c.rows.filter((r) => r.status === "confirm");
  const refused = c.rows.filter((r) => r.status === "refused");
  if (c.config?.status === "accepted" || accepted.length > 0 || heldIn.length > 0)
    lines.push(
      "Accepted (grants power):",
      ...(c.config?.status === "accepted"
        ? [line("+", "config", "the backup's config.yaml", c.config.why)]
        : []),
      ...accepted.map((r) => line("+", r.key, r.what, r.why)),
      ...heldIn.map((h) => line("+", h.key, h.path, h.why)),
    );
  if (c.config?.status === "confirm" || ask.length > 0 || heldOut.length > 0)
    lines.push(
      "Needs your confirmation (left out; grants power or would be held on the desk):",
      ...(c.config?.status === "confirm"
        ? [line("?", "config", "the backup's config.yaml", c.config.why)]
        : []),
      ...ask.map((r) => line("?", r.key, r.what, r.why)),
      ...heldOut.map((h) => line("?", h.key, h.path, `held: ${h.why}`)),
      "  To take some: --accept KEY,KEY (a KEY ending in * takes all it starts); all: --accept-all-risky",
    );
  if (refused.length > 0)
    lines.push("Refused (never restored):", ...refused.map((r) => line("!", r.key, r.what, r.why)));
  for (const k of unmatched) lines.push(`note: --accept ${k} matched nothing in this backup`);
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}
