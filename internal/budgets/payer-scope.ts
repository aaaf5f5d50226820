/**
 * The payer of work done on behalf of a turn outside the turn's own model calls (compaction
 * summaries, the pre-compaction memory flush). The host runs its compactor calls inside
 * {@link withPayer}; the metered model client and nested submits read it with {@link currentPayer}.
 * It is set only around those calls, never around a whole turn, so a timer a tool schedules during a
 * turn (a cron job) does not inherit the turn's payer.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Payer } from "./spend.js";

const store = new AsyncLocalStorage<Payer>();

/** Runs `fn` with `payer` as the current payer. */
export function withPayer<T>(payer: Payer, fn: () => T): T {
  return store.run(payer, fn);
}

/** The payer of the enclosing {@link withPayer}, if any. */
export function currentPayer(): Payer | undefined {
  return store.getStore();
}
