/**
 * Scheduled backups (`backup.enabled`, off by default): every `backup.every` a snapshot as
 * `familiar backup` takes it (internal/store/backup.ts) goes to `backup.dir` (default
 * `<data_dir>/backups`), and only the newest `backup.keep` are kept.
 *
 * Invariants:
 * - the schedule follows the last recorded backup (`kv` backup.last), so a daemon restarted daily
 *   still backs up daily; an overdue backup runs a minute after start;
 * - every outcome is recorded (the console shows the last one); a failure logs an error, turns this
 *   service's health `degraded` and tells the owner once per failure streak where they last wrote;
 * - one backup at a time; stop waits for one in progress.
 */
import { join } from "node:path";
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { TimerHandle } from "../core/clock.js";
import type { Outbox } from "../core/outbox.js";
import { takeBackup } from "../store/backup.js";
import { pruneBackups } from "../store/restore.js";
import { readLastBackup, recordLastBackup, type LastBackup } from "../store/last-backup.js";

export interface BackupService extends Service {
  /** Takes a scheduled-style backup now (tests, and the schedule itself). */
  runNow(): Promise<LastBackup>;
}

const OVERDUE_DELAY_MS = 60_000;

export function createBackupService(
  ctx: CoreContext,
  deps: { configFile: string; outbox: Outbox },
): BackupService {
  const log = ctx.logger.child({ service: "backup" });
  let timer: TimerHandle | undefined;
  let running: Promise<LastBackup> | undefined;
  let started = false;
  let failures = 0;
  let off: (() => void) | undefined;
  const cfg = (): ReturnType<CoreContext["config"]>["backup"] => ctx.config().backup;
  const dir = (): string => cfg().dir ?? join(ctx.config().data_dir, "backups");

  async function once(): Promise<LastBackup> {
    const c = ctx.config();
    let rec: LastBackup;
    try {
      const { dir: out, manifest } = await takeBackup(
        {
          dbFile: join(c.data_dir, "familiar.db"),
          workspace: c.workspace,
          configFile: deps.configFile,
          // Signed with this installation's key: restored here, it is known for its own.
          keyDir: c.data_dir,
        },
        dir(),
        new Date(ctx.clock.now()),
      );
      const gone = pruneBackups(dir(), cfg().keep);
      rec = {
        at: ctx.clock.now(),
        ok: true,
        dir: out,
        bytes: manifest.files.reduce((n, f) => n + f.bytes, 0),
        error: null,
        trigger: "schedule",
      };
      failures = 0;
      log.info({ dir: out, removed: gone.length }, `backup written to ${out}`);
    } catch (err) {
      const msg = (err as Error).message;
      rec = { at: ctx.clock.now(), ok: false, dir: null, bytes: 0, error: msg, trigger: "schedule" };
      failures++;
      log.error({ err: msg }, `scheduled backup failed: ${msg}`);
      const target = deps.outbox.lastTarget();
      if (failures === 1 && target)
        void deps.outbox
          .deliver(target, `The scheduled backup failed: ${msg}. Run \`familiar backup\` to try by hand.`)
          .catch(() => undefined);
    }
    recordLastBackup(ctx.db, rec);
    return rec;
  }

  function runNow(): Promise<LastBackup> {
    running ??= once().finally(() => {
      running = undefined;
    });
    return running;
  }

  function arm(): void {
    if (timer) ctx.clock.clearTimeout(timer);
    timer = undefined;
    if (!started || !cfg().enabled) return;
    const last = readLastBackup(ctx.db);
    const due = last ? last.at + cfg().every : ctx.clock.now() + OVERDUE_DELAY_MS;
    const delay = Math.max(OVERDUE_DELAY_MS, due - ctx.clock.now());
    // Capped like cron's timers, so a suspended machine re-checks within the hour.
    timer = ctx.clock.setTimeout(
      () => {
        timer = undefined;
        const l = readLastBackup(ctx.db);
        if (l && l.at + cfg().every > ctx.clock.now()) return arm();
        void runNow().finally(arm);
      },
      Math.min(delay, 3_600_000),
    );
    timer.unref?.();
  }

  return {
    name: "backup",
    async start() {
      started = true;
      off = ctx.onConfig((_n, _p, changed) => {
        if (changed.includes("backup")) arm();
      });
      arm();
    },
    async stop() {
      started = false;
      off?.();
      if (timer) ctx.clock.clearTimeout(timer);
      timer = undefined;
      await running;
    },
    health(): ServiceHealth {
      const last = readLastBackup(ctx.db);
      if (!cfg().enabled) return { state: "disabled", detail: "backup.enabled is false", last };
      if (last && !last.ok) return { state: "degraded", detail: `last backup failed: ${last.error}`, last };
      return { state: "ok", last };
    },
    runNow,
  };
}
