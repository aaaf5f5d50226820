/**
 * Daemon lifecycle: load config, take the instance lock, open the store, start services in order,
 * and on SIGTERM/SIGINT drain in-flight work, stop services in reverse order and close the store.
 *
 * Startup cost matters (target < 300 ms): modules a config does not use (grammy, discord.js, MCP,
 * croner...) are imported lazily inside the service factories, never at the top of this file.
 *
 * Over 300 lines on purpose: the wiring root reads as the daemon's start-up order in one place
 * (numbered steps, then stop in reverse); each step lives in its own module.
 */
import type { AddressInfo } from "node:net";
import { loadConfigFile } from "../config/load.js";
import { ConfigManager } from "../config/manager.js";
import { createLogger, SecretScrubber, type Logger } from "../log/logger.js";
import { acquireInstanceLock, type InstanceLock } from "../store/lock.js";
import { openDatabase, type Db } from "../store/db.js";
import { setRefusalLogger } from "../workspace/refusal-log.js";
import { narrowModes, octal, privateUmask } from "./private-modes.js";
import { settleDeskLayout } from "./desk-layout.js";
import { allMigrations } from "./migrations.js";
import { EventBus } from "../core/event-bus.js";
import { systemClock, type Clock } from "../core/clock.js";
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import { HttpServer } from "../gateway/http-server.js";
import { ChannelRegistry } from "../channels/registry.js";
import { kvLastTargetStore } from "../channels/last-target-store.js";
import { collectSecrets } from "./secrets.js";
import { buildServices, type DaemonParts } from "./services.js";
import { flushTraces } from "../agent/trace.js";
import { startIdleShrink, type IdleShrink } from "../store/idle-shrink.js";
import { createQuietTrim, type QuietTrim } from "./quiet-trim.js";
import { cacheOf } from "../session/message-cache.js";
import { tokenFilePath } from "../gateway/token-store.js";
import { removeRuntimeFile, writeRuntimeFile } from "../gateway/runtime-file.js";
import { listenGateway } from "./gateway-listen.js";
import { ensureWorkspaceDir } from "./workspace-dir.js";

export interface DaemonOptions {
  configPath: string;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Log destination (tests); stdout by default. */
  logDestination?: NodeJS.WritableStream;
  /** Watch the config file for changes (default true). */
  watchConfig?: boolean;
}

/** A running daemon. */
export class Daemon {
  private services: Service[] = [];
  private stopping: Promise<void> | undefined;
  private ready = false;
  private wroteRuntimeFile = false;
  /** Frees SQLite's page cache when the daemon goes quiet after a burst (issue 26). */
  private readonly idleShrink: IdleShrink;
  private readonly quietTrim: QuietTrim;
  address: AddressInfo | undefined;
  parts!: DaemonParts;

  private constructor(
    readonly config: ConfigManager,
    readonly logger: Logger,
    readonly db: Db,
    readonly ctx: CoreContext,
    readonly http: HttpServer,
    readonly channels: ChannelRegistry,
    private lock: InstanceLock,
  ) {
    // A quiet spell drops the session message cache too: its rows are re-read on a session's next turn.
    // And gives the C heap's free pages back (daemon/quiet-trim.ts).
    this.quietTrim = createQuietTrim(logger);
    this.idleShrink = startIdleShrink(db, undefined, () => {
      cacheOf(db).clear();
      this.quietTrim.afterQuiet();
    });
  }

  /** Loads config and starts everything. Throws (with a one-line reason) when start fails. */
  static async start(opts: DaemonOptions): Promise<Daemon> {
    const env = opts.env ?? process.env;
    const loaded = loadConfigFile(opts.configPath, env);
    const scrubber = new SecretScrubber();
    scrubber.set(collectSecrets(loaded.config));
    const logger = createLogger({
      level: loaded.config.log.level,
      ...(loaded.config.log.pretty !== undefined ? { pretty: loaded.config.log.pretty } : {}),
      scrubber,
      ...(opts.logDestination ? { destination: opts.logDestination } : {}),
    });
    const manager = new ConfigManager(loaded.file, loaded.config, logger, env);
    manager.onChange((next) => {
      scrubber.set(collectSecrets(next));
      logger.level = next.log.level;
    });
    const cfg = loaded.config;
    // Which .env files filled ${VAR} (config/env-file.ts): their names, never their values.
    if (loaded.envFiles?.length)
      logger.info({ files: loaded.envFiles }, `config variables read from ${loaded.envFiles.join(", ")}`);
    // Owner data is private on disk (docs/security.md, invariant 5): new files 0600, folders 0700,
    // and an install made before that narrowed now. The workspace door logs each refused link once.
    privateUmask();
    setRefusalLogger(logger);
    const lock = acquireInstanceLock(cfg.data_dir);
    let db: Db | undefined;
    try {
      // Commands and CLI engines run in the workspace: it exists before anything starts, or start
      // fails naming it (issue 46 item 1). A reload to a new folder makes that one too.
      if (ensureWorkspaceDir(cfg.workspace))
        logger.info({ workspace: cfg.workspace }, "workspace folder created (0700)");
      manager.onChange((next, prev) => {
        if (next.workspace === prev.workspace) return;
        try {
          if (ensureWorkspaceDir(next.workspace))
            logger.info({ workspace: next.workspace }, "workspace folder created (0700)");
        } catch (err) {
          logger.error({ err: (err as Error).message }, "the new workspace cannot be used");
        }
      });
      // An upgrade first copies the database beside itself (familiar.db.pre-<level>); a database a
      // newer build wrote is refused in one line naming that copy (store/upgrade-guard.ts).
      db = openDatabase(cfg.data_dir, { migrations: allMigrations });
      logger.info({ file: `${cfg.data_dir}/familiar.db` }, "store opened");
      logNarrowed(logger, narrowModes(cfg.data_dir, cfg.workspace, loaded.file));
      settleDeskLayout(cfg.workspace, db, logger);
      const bus = new EventBus();
      manager.onError((message) => bus.emit("config.error", { message }));
      const ctx: CoreContext = {
        config: () => manager.get(),
        onConfig: (fn) => manager.onChange(fn),
        logger,
        db,
        clock: opts.clock ?? systemClock,
        bus,
        startedAt: Date.now(),
      };
      const channels = new ChannelRegistry(kvLastTargetStore(db));
      // The HTTP server needs the daemon's health, and the daemon needs the server: tie the knot late.
      const self: { daemon?: Daemon } = {};
      const http = new HttpServer(() => self.daemon?.health() ?? { status: "starting" });
      const daemon = new Daemon(manager, logger, db, ctx, http, channels, lock);
      self.daemon = daemon;
      await daemon.startServices();
      if (opts.watchConfig !== false) manager.watch();
      return daemon;
    } catch (err) {
      db?.close();
      lock.release();
      throw err;
    }
  }

  private async startServices(): Promise<void> {
    const cfg = this.ctx.config();
    const { parts, services } = await buildServices(this.ctx, this.http, this.channels, this.config);
    this.parts = parts;
    for (const s of services) {
      const t0 = performance.now();
      await s.start();
      this.services.push(s);
      const ms = Math.round(performance.now() - t0);
      // A channel that is off is built (a reload can turn it on) but not running: do not claim it started.
      if (s.health().state === "disabled")
        this.logger.debug({ service: s.name, ms }, `${s.name} is disabled (not started)`);
      else this.logger.info({ service: s.name, ms }, `${s.name} started`);
    }
    if (cfg.gateway.enabled) {
      this.address = await listenGateway(this.http, cfg, this.config.file);
      const url = `http://${connectHost(cfg.gateway.bind)}:${this.address.port}`;
      // Where the token is, never the token: log files and journald are read by more eyes than the data dir.
      const tokenFile = tokenFilePath(cfg.data_dir);
      this.logger.info(
        {
          bind: this.address.address,
          port: this.address.port,
          token: cfg.gateway.token ? "gateway.token (config)" : tokenFile,
        },
        `gateway listening on ${url} (token ${cfg.gateway.token ? "from gateway.token" : `in ${tokenFile}`}; \`familiar dashboard\` prints a login link)`,
      );
      // The CLI's way to the running daemon, whatever config.yaml says by now.
      writeRuntimeFile(cfg.data_dir, {
        pid: process.pid,
        url,
        bind: cfg.gateway.bind,
        port: this.address.port,
        token: cfg.gateway.token ? { source: "config" } : { source: "file", file: tokenFile },
        configFile: this.config.file,
        startedAt: this.ctx.startedAt,
      });
      this.wroteRuntimeFile = true;
    }
    this.ready = true;
    this.logger.info({ ms: Math.round(performance.now()) }, "familiar is ready");
    this.ctx.bus.emit("daemon.ready", { ms: Math.round(performance.now()) });
  }

  /** Aggregated health for `/healthz` (no secrets). */
  health(): { status: string; [k: string]: unknown } {
    const services: Record<string, ServiceHealth> = {};
    let status = this.ready ? "ok" : "starting";
    try {
      this.db.prepare("SELECT 1").get();
      services.store = { state: "ok" };
    } catch (err) {
      services.store = { state: "error", detail: (err as Error).message };
      status = "degraded";
    }
    // The model router is a part, not a service: its state (chain, cooldowns) belongs in health too.
    const router = this.parts?.router;
    if (router) {
      try {
        services.models = { ...router.status() };
      } catch (err) {
        services.models = { state: "error", detail: (err as Error).message };
      }
    }
    for (const s of this.services) {
      try {
        services[s.name] = s.health();
      } catch (err) {
        services[s.name] = { state: "error", detail: (err as Error).message };
      }
    }
    // A channel the watchdog found dead (restarted and still down) must not leave the light green.
    if (status === "ok" && services["channel-watchdog"]?.state === "error") status = "degraded";
    // A nearly full disk under the database is the owner's to see from outside before messages stop
    // being stored: the top line says `warning` (still HTTP 200: the daemon works) and names it.
    const warnings: string[] = [];
    if (services.disk?.state === "degraded") warnings.push(services.disk.detail ?? "disk nearly full");
    if (status === "ok" && warnings.length > 0) status = "warning";
    return {
      status,
      uptime_s: Math.round((Date.now() - this.ctx.startedAt) / 1000),
      pid: process.pid,
      services,
      channels: this.channels.statuses(),
      config_error: this.config.error() ?? null,
      ...(warnings.length > 0 ? { warnings } : {}),
    };
  }

  /** Drains in-flight work (bounded by `shutdown_timeout_s`), stops services in reverse order, closes the store. */
  stop(reason = "stop"): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopping = (async () => {
      const timeoutMs = this.ctx.config().shutdown_timeout_s * 1000;
      this.logger.info({ reason }, "shutting down: draining in-flight work");
      this.ready = false;
      await this.config.close();
      await this.parts.host?.drain(timeoutMs).catch(() => undefined);
      for (const s of [...this.services].reverse()) {
        try {
          await withTimeout(s.stop(), 5000, `${s.name} did not stop in 5 s`);
        } catch (err) {
          this.logger.warn({ service: s.name, err: (err as Error).message }, "service stop failed");
        }
      }
      await this.http.close().catch(() => undefined);
      if (this.wroteRuntimeFile) {
        try {
          removeRuntimeFile(this.ctx.config().data_dir);
        } catch (err) {
          this.logger.warn({ err: (err as Error).message }, "could not remove the gateway runtime file");
        }
      }
      this.idleShrink.stop();
      this.quietTrim.stop();
      flushTraces(this.db);
      try {
        this.db.pragma("wal_checkpoint(TRUNCATE)");
      } catch {
        /* best effort */
      }
      this.db.close();
      this.lock.release();
      this.logger.info("stopped");
    })();
    return this.stopping;
  }
}

/** The address a local client dials for a bind address (a wildcard bind is reached on loopback). */
function connectHost(bind: string): string {
  if (bind === "0.0.0.0" || bind === "") return "127.0.0.1";
  if (bind === "::") return "[::1]";
  return bind.includes(":") ? `[${bind}]` : bind;
}

async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(message)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/** One line per path narrowed at start, one warning per path that could not be. */
function logNarrowed(logger: Logger, r: ReturnType<typeof narrowModes>): void {
  for (const n of r.narrowed)
    logger.warn(
      { path: n.path, from: octal(n.mode), to: octal(n.mode & 0o700) },
      `${n.what} was readable by other users: narrowed to ${octal(n.mode & 0o700)}`,
    );
  for (const f of r.failed)
    logger.warn({ path: f.path, err: f.reason }, "could not make a private path owner-only");
}
