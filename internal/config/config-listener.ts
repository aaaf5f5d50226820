/** A subscriber to config swaps (see `ConfigManager`). */
import type { Config } from "./schema.js";

export type ConfigListener = (next: Config, prev: Config, changed: readonly string[]) => void;
