/**
 * Watches the free space of the disk holding the data dir (the database and its WAL): a sandboxed
 * command, a large download or a runaway log can fill it, and then every turn fails to store.
 *
 * Invariants:
 * - below `disk.warn_free_mb` or `disk.warn_free_percent` the state is `degraded`: `/healthz` stops
 *   saying plain `ok`, and `familiar status` and the console show the line;
 * - the owner is told ONCE per low spell, through the owner-notice target (`budgets.warn_target`, or
 *   the chat the owner last wrote from when that is `none`), and a restart during the spell does not
 *   repeat it (a `kv` mark, cleared when space is back);
 * - the reading is a function parameter (`statfs`), so tests report a nearly full disk without
 *   filling one; a failed reading is logged and leaves the state as it was.
 */
import { statfsSync } from "node:fs";
import { resolve } from "node:path";
import type { TimerHandle } from "../core/clock.js";
import { KvNamespace } from "../store/kv.js";
import type { CoreContext, Service, ServiceHealth } from "./context.js";

/** What a statfs reports, in bytes. */
export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

/** Reads the space of the file system holding `path`. */
export type StatfsReader = (path: string) => DiskSpace;

/** The real reader: blocks available to an unprivileged writer (what SQLite gets). */
export const realStatfs: StatfsReader = (path) => {
  const s = statfsSync(path);
  return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
};

export interface DiskWatchOptions {
  statfs?: StatfsReader;
  /** Delivers the owner notice to a channel target (the daemon's outbox). */
  deliver?: (target: string, text: string) => Promise<void>;
}

const MB = 1024 * 1024;
const WARNED_KEY = "low-warned";

export class DiskWatch implements Service {
  readonly name = "disk";
  private timer: TimerHandle | undefined;
  private last: (DiskSpace & { low: boolean }) | undefined;
  private readonly kv: KvNamespace;
  private readonly statfs: StatfsReader;

  constructor(
    private readonly ctx: CoreContext,
    private readonly opts: DiskWatchOptions = {},
  ) {
    this.kv = new KvNamespace(ctx.db, "disk.", () => ctx.clock.now());
    this.statfs = opts.statfs ?? realStatfs;
  }

  start(): Promise<void> {
    this.check();
    this.schedule();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    if (this.timer) this.ctx.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return Promise.resolve();
  }

  private schedule(): void {
    const every = Math.max(1000, this.ctx.config().disk.check_every);
    this.timer = this.ctx.clock.setTimeout(() => {
      this.check();
      this.schedule();
    }, every);
    this.timer.unref?.();
  }

  /** Reads the space now, updates the state, tells the owner on the way down. */
  check(): void {
    const cfg = this.ctx.config();
    const dir = resolve(cfg.data_dir);
    let space: DiskSpace;
    try {
      space = this.statfs(dir);
    } catch (err) {
      this.ctx.logger.warn(
        { dir, err: (err as Error).message },
        "could not read the data dir's free disk space",
      );
      return;
    }
    const percent = space.totalBytes > 0 ? (space.freeBytes / space.totalBytes) * 100 : 100;
    const low = space.freeBytes < cfg.disk.warn_free_mb * MB || percent < cfg.disk.warn_free_percent;
    const was = this.last?.low ?? false;
    this.last = { ...space, low };
    if (low && !was) {
      this.ctx.logger.warn({ dir, free_mb: Math.floor(space.freeBytes / MB) }, this.describe());
      this.notifyOnce();
    } else if (!low && was) {
      this.ctx.logger.info(
        { dir, free_mb: Math.floor(space.freeBytes / MB) },
        "disk space is back above the warning level",
      );
      this.kv.delete(WARNED_KEY);
    } else if (!low && this.kv.get(WARNED_KEY)) this.kv.delete(WARNED_KEY);
  }

  private describe(): string {
    const l = this.last;
    if (!l) return "disk space not read yet";
    const free = Math.floor(l.freeBytes / MB);
    const pct = l.totalBytes > 0 ? ((l.freeBytes / l.totalBytes) * 100).toFixed(1) : "?";
    return l.low
      ? `the disk holding the data dir is nearly full: ${free} MB free (${pct}%); Familiar stops storing messages when it is full. Free some space (old files in the workspace, logs), or lower disk.warn_free_mb / disk.warn_free_percent in config.yaml.`
      : `${free} MB free (${pct}%)`;
  }

  private notifyOnce(): void {
    if (this.kv.get(WARNED_KEY)) return;
    this.kv.set(WARNED_KEY, "1");
    // The owner's notice target; without one, the chat the owner last wrote from (`last`): a full
    // disk is not a warning to keep in the log only.
    const configured = this.ctx.config().budgets.warn_target;
    const target = configured === "none" ? "last" : configured;
    if (!this.opts.deliver) return;
    this.opts.deliver(target, `Warning: ${this.describe()}`).catch((err: unknown) => {
      this.ctx.logger.warn(
        { target, err: (err as Error).message },
        "could not deliver the disk space warning",
      );
    });
  }

  /** `ok`, or `degraded` with the reason while the disk is low. */
  health(): ServiceHealth {
    const l = this.last;
    if (!l) return { state: "starting" };
    return {
      state: l.low ? "degraded" : "ok",
      detail: this.describe(),
      free_mb: Math.floor(l.freeBytes / MB),
      total_mb: Math.floor(l.totalBytes / MB),
    };
  }
}
