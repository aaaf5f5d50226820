/**
 * What the parts of the cron service share: the job entries (one per job id, config or runtime), the
 * store, the clock and the live settings. Built once by `createCronService` and handed to each part,
 * so the timers, the runs, the reconciliation and the admin calls see the same entries.
 */
import type { CoreContext } from "../runtime/context.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../log/logger.js";
import type { CronState, CronStore } from "./cron-store.js";
import type { CronEntry } from "./cron-types.js";
import type { CronOrigins } from "./cron-origins.js";
import type { FallbackPlaces } from "./cron-reply-route.js";

/** The shared state of one cron service. */
export interface CronScope {
  ctx: CoreContext;
  clock: Clock;
  log: Logger;
  store: CronStore;
  /** Where runtime jobs were asked, and the replies that reached nobody. */
  origins: CronOrigins;
  /** Where a reply falls back to (owner.preferred_channel, the last chat), read at each use. */
  places(): FallbackPlaces;
  /** Every scheduled (or unschedulable) job by id; the one source of truth for timers and views. */
  entries: Map<string, CronEntry>;
  /** True between start and stop: timers are armed only then. */
  isStarted(): boolean;
  /** `timezone` of the current config. */
  tz(): string;
  /** `cron.enabled` of the current config. */
  enabled(): boolean;
  /** The job's stored schedule state. */
  stateOf(e: CronEntry): CronState | undefined;
}
