/**
 * After a quiet spell (store/idle-shrink.ts), gives the C heap's free pages back
 * (core/malloc-trim.ts): once at once, for what SQLite's `shrink_memory` just freed, and once more
 * 20 s later, after V8's memory reducer has run its GCs and freed the off-heap memory of the burst's
 * objects. Where trimming is unavailable it says why once, at debug, and otherwise stays silent.
 */
import { mallocTrim } from "../core/malloc-trim.js";
import type { Logger } from "../log/logger.js";

/** The daemon's trimmer: `afterQuiet` on each quiet spell, `stop` at shutdown. */
export interface QuietTrim {
  afterQuiet(): void;
  stop(): void;
}

/** A trimmer that logs to `logger`; `laterMs` is the delay of the second trim. */
export function createQuietTrim(logger: Logger, laterMs = 20_000): QuietTrim {
  let timer: NodeJS.Timeout | undefined;
  let reported = false;
  const trim = (): void => {
    const r = mallocTrim();
    if (r.unavailable && !reported) {
      reported = true;
      logger.debug({ reason: r.unavailable }, "memory: free C heap pages are not given back");
    }
  };
  return {
    afterQuiet() {
      trim();
      clearTimeout(timer);
      timer = setTimeout(trim, laterMs);
      timer.unref();
    },
    stop() {
      clearTimeout(timer);
    },
  };
}
