/**
 * `familiar backup [--to DIR]` and `familiar restore DIR [--check] [--accept KEY,...]
 * [--accept-all-risky]`. A backup works while the daemon runs
 * (SQLite's online backup through its own connection); a restore refuses while one runs on the
 * target data dir. See internal/store/backup.ts and restore.ts for the invariants, docs/backup.md.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { UnresolvedEnv } from "../config/load.js";
import type { LastBackup } from "../store/last-backup.js";
import type { AskIO, AskItem } from "../importer/ask-consent.js";
import type { RestoreCheck } from "../importer/restore-backup.js";

export interface BackupCliOptions {
  config: string;
  to?: string;
}

/** Takes a snapshot; prints its directory and counts. Exit code 1 on failure. */
export async function backupCommand(opts: BackupCliOptions): Promise<void> {
  const { loadConfigFile } = await import("../config/load.js");
  const { takeBackup } = await import("../store/backup.js");
  const { recordLastBackup } = await import("../store/last-backup.js");
  const { openDatabase } = await import("../store/db.js");
  const { allMigrations } = await import("../daemon/migrations.js");
  // The config is copied byte for byte, so a ${VAR} unset in this shell (a timer, another terminal)
  // does not matter: say which were left unresolved instead of refusing.
  const loaded = loadConfigFile(opts.config, process.env, { deferSecrets: true });
  const cfg = loaded.config;
  if (loaded.unresolvedEnv.length) process.stderr.write(`${unresolvedNote(loaded.unresolvedEnv)}\n`);
  const to = resolve(opts.to ?? cfg.backup.dir ?? join(cfg.data_dir, "backups"));
  const record = (b: LastBackup): void => {
    try {
      const db = openDatabase(cfg.data_dir, { migrations: allMigrations });
      try {
        recordLastBackup(db, b);
      } finally {
        db.close();
      }
    } catch {
      /* recording is best effort */
    }
  };
  try {
    const { dir, manifest } = await takeBackup(
      {
        dbFile: join(cfg.data_dir, "familiar.db"),
        workspace: cfg.workspace,
        configFile: loaded.file,
        keyDir: cfg.data_dir,
      },
      to,
    );
    const bytes = manifest.files.reduce((n, f) => n + f.bytes, 0);
    record({ at: Date.now(), ok: true, dir, bytes, error: null, trigger: "manual" });
    process.stdout.write(
      `backup written to ${dir}\n${manifest.files.length} files, ${(bytes / 1048576).toFixed(1)} MB; ` +
        `${Object.entries(manifest.counts)
          .map(([t, n]) => `${t} ${n}`)
          .join(", ")}\n` +
        (manifest.skipped.length
          ? `skipped in the workspace: ${manifest.skipped.map((s) => `${s.path} (${s.why})`).join(", ")}\n`
          : ""),
    );
  } catch (err) {
    record({
      at: Date.now(),
      ok: false,
      dir: null,
      bytes: 0,
      error: (err as Error).message,
      trigger: "manual",
    });
    process.stderr.write(`backup failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}

export interface RestoreCliOptions {
  config: string;
  /** Checks the backup and prints what a restore would do; writes nothing. */
  check?: boolean;
  /** Keys of rows (or `config`) that grant power and are taken. */
  accept?: string | string[];
  acceptAllRisky?: boolean;
  /** Where the owner is asked (tests); stdin and stdout otherwise. */
  io?: AskIO;
}

/**
 * Restores a snapshot into the instance of `--config`. The backup is untrusted input: it is checked
 * whole first (internal/importer/restore-backup.ts), what grants power comes back only when accepted,
 * and the backup's config.yaml becomes the instance's only with `--accept config`.
 */
export async function restoreCommand(dir: string, opts: RestoreCliOptions): Promise<void> {
  const { loadConfigFile } = await import("../config/load.js");
  const { checkRestore, formatRestoreCheck, runRestore, writeBackupConfig } =
    await import("../importer/restore-backup.js");
  const { Consent } = await import("../importer/consent.js");
  const { askConsent, canAsk, NOT_ASKED } = await import("../importer/ask-consent.js");
  const { readBackupKey } = await import("../store/backup-key.js");
  const { openDatabase } = await import("../store/db.js");
  const { allMigrations } = await import("../daemon/migrations.js");
  const from = resolve(dir);
  const configFile = resolve(opts.config);
  let consent = Consent.fromFlags(opts.accept, opts.acceptAllRisky);
  try {
    const hasConfig = existsSync(configFile);
    // This installation's key (in its data dir) tells its own backups: none for a fresh directory.
    const key = hasConfig
      ? readBackupKey(loadConfigFile(configFile, process.env, { deferSecrets: true }).config.data_dir)
      : undefined;
    let check = checkRestore(from, consent, hasConfig, key);
    const io = opts.io ?? { input: process.stdin, output: process.stdout };
    const askable = restoreAsked(check);
    let notAsked = "";
    if (askable.length > 0 && !opts.check)
      if (canAsk(io, opts.accept !== undefined || opts.acceptAllRisky === true)) {
        const keys = await askConsent(askable, io);
        consent = new Consent(keys);
        check = checkRestore(from, consent, hasConfig, key);
      } else notAsked = `${NOT_ASKED}\n`;
    const report = formatRestoreCheck(check, consent.unmatched()) + notAsked;
    if (opts.check) {
      const m = check.manifest;
      process.stdout.write(
        `backup ${from} checked: ${m.files.length} files, sha256 and layout ok (no links, nothing outside it)\n` +
          `${Object.entries(m.counts)
            .map(([t, n]) => `${t} ${n}`)
            .join(", ")}\n${report}nothing was written\n`,
      );
      return;
    }
    if (!existsSync(configFile)) {
      if (check.config?.status !== "accepted")
        throw new Error(
          `${configFile} does not exist. ${
            check.config
              ? "The backup's config.yaml would decide the programs, tools, channels and keys of the instance: read it, then pass --accept config to take it,"
              : "The backup has no config.yaml:"
          } or write your own first (familiar init)`,
        );
      // A fresh directory gets the backup's config first, so its paths decide where things go.
      const { mkdirSync } = await import("node:fs");
      mkdirSync(dirname(configFile), { recursive: true });
      writeBackupConfig(check, configFile);
      process.stdout.write(`config written to ${configFile} from the backup\n`);
    }
    const loadedCfg = loadConfigFile(configFile, process.env, { deferSecrets: true });
    if (loadedCfg.unresolvedEnv.length) process.stderr.write(`${unresolvedNote(loadedCfg.unresolvedEnv)}\n`);
    const cfg = loadedCfg.config;
    const r = runRestore(check, { dataDir: cfg.data_dir, workspace: cfg.workspace, configFile });
    // Open once with the migrations: a snapshot of an older version is brought up to date now.
    openDatabase(cfg.data_dir, { migrations: allMigrations }).close();
    process.stdout.write(
      `restored ${from}\ninto ${cfg.data_dir} (workspace ${cfg.workspace})\n` +
        `${Object.entries(r.counts)
          .map(([t, n]) => `${t} ${n}`)
          .join(", ")}\n` +
        (r.movedAside.length ? `kept aside: ${r.movedAside.join(", ")}\n` : "") +
        report,
    );
  } catch (err) {
    process.stderr.write(`restore failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}

/** What a restore would leave out for want of the owner's yes, as questions. */
function restoreAsked(c: RestoreCheck): AskItem[] {
  return [
    ...(c.config?.status === "confirm"
      ? [{ group: "config", key: "config", text: "the backup's config.yaml becomes this instance's" }]
      : []),
    ...c.rows
      .filter((r) => r.status === "confirm")
      .map((r) => ({ group: r.table, key: r.key, text: `${r.what}: ${r.why}` })),
    ...c.held
      .filter((h) => h.status === "held")
      .map((h) => ({ group: "workspace files", key: h.key, text: `${h.path}: held: ${h.why}` })),
  ];
}

/** "skipped (not needed here): ${OPENAI_API_KEY} at models.providers.openai.api_key is not set; ..." */
function unresolvedNote(list: UnresolvedEnv[]): string {
  return `skipped (not needed to copy the config): ${list
    .map((u) => `\${${u.name}} at ${u.path} is not set`)
    .join("; ")}`;
}
