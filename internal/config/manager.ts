/**
 * Holds the live config and hot-reloads it. Invariants:
 * - the live object is only ever replaced whole by a fully validated one;
 * - an invalid edit never takes effect: the old config stays and one error is reported;
 * - keys that need a restart are reported, and their old values stay in the live object.
 */
import { ENV_FILE } from "./env-file.js";
import type { FSWatcher } from "chokidar";
import { basename, dirname } from "node:path";
import type { Logger } from "../log/logger.js";
import type { Config } from "./schema.js";
import { loadConfigFile } from "./load.js";
import { ConfigError } from "./errors.js";
import type { ConfigListener } from "./config-listener.js";

/** Config keys whose change only applies after a restart. */
export const RESTART_KEYS = [
  "data_dir",
  "gateway.bind",
  "gateway.port",
  "gateway.enabled",
  "channels.telegram.webhook",
] as const;

/** A restart-only key whose value in the file differs from the running one. */
export interface PendingRestartChange {
  key: string;
  /** The value the daemon runs with (omitted for keys that may hold secrets). */
  running?: unknown;
  /** The value in the config file, waiting for a restart. */
  file?: unknown;
}

/** Restart keys whose values are safe to show (no secrets in them). */
const SHOWN_KEYS = new Set(["data_dir", "gateway.bind", "gateway.port", "gateway.enabled"]);

export interface ReloadOutcome {
  ok: boolean;
  changed: string[];
  restartRequired: string[];
  error?: string;
}

export class ConfigManager {
  private current: Config;
  private listeners = new Set<ConfigListener>();
  private errorListeners = new Set<(msg: string) => void>();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watchReady: Promise<void> | undefined;
  private lastError: string | undefined;
  private pending: PendingRestartChange[] = [];

  constructor(
    readonly file: string,
    initial: Config,
    private logger: Logger,
    private env: NodeJS.ProcessEnv = process.env,
  ) {
    this.current = initial;
  }

  get(): Config {
    return this.current;
  }

  /**
   * Restart-only keys changed in the file since the daemon started (as of the last valid reload):
   * `familiar status` shows them so the owner knows a restart is due.
   */
  pendingRestart(): PendingRestartChange[] {
    return this.pending.map((p) => ({ ...p }));
  }

  /** The last reload error, cleared by the next successful reload. */
  error(): string | undefined {
    return this.lastError;
  }

  onChange(fn: ConfigListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onError(fn: (msg: string) => void): () => void {
    this.errorListeners.add(fn);
    return () => this.errorListeners.delete(fn);
  }

  /**
   * Starts watching the file. Watches the directory so rename-saves (vim, VS Code) are seen. The
   * returned promise resolves once the watcher is ready; the file is re-read then, so an edit made
   * after the first read but before the watcher was ready is applied too.
   */
  watch(debounceMs = 250): Promise<void> {
    if (this.watchReady) return this.watchReady;
    const dir = dirname(this.file);
    const name = basename(this.file);
    // chokidar loads here, after the daemon is up, not at start.
    const ready: Promise<void> = import("chokidar").then(({ watch }) => {
      if (this.watchReady !== ready) return; // closed while chokidar was loading
      const watcher = watch(dir, {
        ignoreInitial: true,
        depth: 0,
        // Only the config file and the owner's .env beside it (config/env-file.ts): an editor's temp
        // and backup files never trigger a reload.
        ignored: (p: string) => p !== dir && basename(p) !== name && basename(p) !== ENV_FILE,
      });
      this.watcher = watcher;
      const kick = (): void => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => {
          this.timer = undefined;
          if (this.watcher) this.reload();
        }, debounceMs);
      };
      watcher.on("add", kick).on("change", kick);
      watcher.on("error", (err) => this.logger.warn({ err }, "config watcher error"));
      return new Promise<void>((resolve) =>
        watcher.once("ready", () => {
          // The watcher starts after the daemon is up (chokidar loads lazily), so an edit made between
          // the first read and "ready" raised no event: re-read once now. An unchanged file is a
          // silent no-op (apply() notifies only on changed sections).
          if (this.watcher === watcher) this.reload();
          resolve();
        }),
      );
    });
    this.watchReady = ready;
    return ready;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const w = this.watcher;
    this.watcher = undefined;
    this.watchReady = undefined;
    await w?.close();
  }

  /** Re-reads and applies the file now. Never throws. */
  reload(): ReloadOutcome {
    let next: Config;
    try {
      next = loadConfigFile(this.file, this.env).config;
    } catch (err) {
      const msg =
        err instanceof ConfigError ? err.message : `config reload failed: ${(err as Error).message}`;
      this.lastError = msg;
      this.logger.error({ file: this.file }, `config change rejected, previous config stays live: ${msg}`);
      for (const fn of this.errorListeners) fn(msg);
      return { ok: false, changed: [], restartRequired: [], error: msg };
    }
    return this.apply(next);
  }

  /** Applies an already-validated config (used by reload and tests). */
  apply(candidate: Config): ReloadOutcome {
    const prev = this.current;
    const restartRequired: string[] = [];
    let next: Config = candidate;
    const pending: PendingRestartChange[] = [];
    for (const key of RESTART_KEYS) {
      const running = getPath(prev, key);
      const wanted = getPath(next, key);
      if (JSON.stringify(running) !== JSON.stringify(wanted)) {
        restartRequired.push(key);
        pending.push(SHOWN_KEYS.has(key) ? { key, running, file: wanted } : { key });
        next = setPath(next, key, running);
      }
    }
    this.pending = pending;
    const changed = diffSections(prev, next);
    this.lastError = undefined;
    if (restartRequired.length > 0)
      this.logger.warn(
        { keys: restartRequired },
        `config keys changed that need a restart to apply: ${pending
          .map((p) =>
            "running" in p ? `${p.key} (${JSON.stringify(p.running)} -> ${JSON.stringify(p.file)})` : p.key,
          )
          .join(", ")}`,
      );
    if (changed.length === 0) return { ok: true, changed, restartRequired };
    this.current = next;
    this.logger.info({ changed }, `config reloaded (${changed.join(", ")})`);
    for (const fn of this.listeners) {
      try {
        fn(next, prev, changed);
      } catch (err) {
        this.logger.error({ err }, "config listener failed");
      }
    }
    return { ok: true, changed, restartRequired };
  }
}

/** Lists changed sections: top-level keys, and `channels.<name>` / `agents.<id>` one level down. */
export function diffSections(a: Config, b: Config): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const av = (a as Record<string, unknown>)[k];
    const bv = (b as Record<string, unknown>)[k];
    if (JSON.stringify(av) === JSON.stringify(bv)) continue;
    if (
      (k === "channels" || k === "agents") &&
      av &&
      bv &&
      typeof av === "object" &&
      typeof bv === "object"
    ) {
      const sub = new Set([...Object.keys(av), ...Object.keys(bv)]);
      for (const s of sub) {
        if (
          JSON.stringify((av as Record<string, unknown>)[s]) !==
          JSON.stringify((bv as Record<string, unknown>)[s])
        )
          out.push(`${k}.${s}`);
      }
    } else out.push(k);
  }
  return out;
}

function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const p of path.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

function setPath<T>(obj: T, path: string, value: unknown): T {
  const [head, ...rest] = path.split(".");
  if (head === undefined) return obj;
  const copy = { ...(obj as Record<string, unknown>) };
  copy[head] = rest.length === 0 ? value : setPath(copy[head] ?? {}, rest.join("."), value);
  return copy as T;
}
