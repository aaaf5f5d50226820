/**
 * Test helper: a real CoreContext over a real SQLite file in a temp dir (no daemon, no sockets).
 */
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configFromObject } from "../../internal/config/load.js";
import { ConfigManager } from "../../internal/config/manager.js";
import type { Config } from "../../internal/config/schema.js";
import type { CoreContext } from "../../internal/runtime/context.js";
import { EventBus } from "../../internal/core/event-bus.js";
import { systemClock, type Clock } from "../../internal/core/clock.js";
import { silentLogger } from "../../internal/log/logger.js";
import { openDatabase, type Db } from "../../internal/store/db.js";
import { allMigrations } from "../../internal/daemon/migrations.js";

export interface TestCore {
  ctx: CoreContext;
  dir: string;
  db: Db;
  manager: ConfigManager;
  /** Applies a new config object (validated) as a hot reload would. */
  setConfig(obj: Record<string, unknown>): Config;
  close(): void;
}

/** Creates a context with `data_dir` and `workspace` in a fresh temp dir. */
export function createTestCore(
  configObj: Record<string, unknown> = {},
  opts: { clock?: Clock; dir?: string } = {},
): TestCore {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "familiar-test-"));
  const base = {
    data_dir: join(dir, "data"),
    workspace: join(dir, "workspace"),
    timezone: "UTC",
    log: { level: "silent" },
  };
  mkdirSync(join(dir, "workspace"), { recursive: true });
  const config = configFromObject({ ...base, ...configObj }, dir);
  const logger = silentLogger();
  const manager = new ConfigManager(join(dir, "config.yaml"), config, logger);
  const db = openDatabase(config.data_dir, { migrations: allMigrations });
  const ctx: CoreContext = {
    config: () => manager.get(),
    onConfig: (fn) => manager.onChange(fn),
    logger,
    db,
    clock: opts.clock ?? systemClock,
    bus: new EventBus(),
    startedAt: Date.now(),
  };
  return {
    ctx,
    dir,
    db,
    manager,
    setConfig(obj) {
      const next = configFromObject({ ...base, ...obj }, dir);
      manager.apply(next);
      return next;
    },
    close() {
      try {
        db.close();
      } catch {
        /* closed */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
