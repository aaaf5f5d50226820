/**
 * What the daemon hands to each service. Config is read through `config()` on every use, never
 * cached, so a hot reload (which swaps the whole object) is seen at once.
 */
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import type { Logger } from "../log/logger.js";
import type { Clock } from "../core/clock.js";
import type { EventBus } from "../core/event-bus.js";
import type { ConfigListener } from "../config/config-listener.js";

export type { Service, ServiceHealth } from "../core/service.js";
export type { ConfigListener } from "../config/config-listener.js";

export interface CoreContext {
  config(): Config;
  /** Subscribes to config swaps; `changed` lists changed top-level sections (e.g. `cron`, `channels.telegram`). */
  onConfig(fn: ConfigListener): () => void;
  logger: Logger;
  db: Db;
  clock: Clock;
  bus: EventBus;
  startedAt: number;
}
