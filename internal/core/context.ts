/**
 * What the daemon hands to each service. Config is read through `config()` on every use, never
 * cached, so a hot reload (which swaps the whole object) is seen at once.
 */
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import type { Logger } from "../log/logger.js";
import type { Clock } from "./clock.js";
import type { EventBus } from "./event-bus.js";

export type ConfigListener = (next: Config, prev: Config, changed: readonly string[]) => void;

export interface ServiceHealth {
  state: "ok" | "starting" | "degraded" | "error" | "disabled";
  detail?: string;
  [k: string]: unknown;
}

/** A long-running part of the daemon started and stopped in order. */
export interface Service {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): ServiceHealth;
}

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
