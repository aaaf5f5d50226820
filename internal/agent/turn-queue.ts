/**
 * Admission of turns: one queue per session key and one global limit.
 *
 * Invariants:
 * - turns of one session key run one at a time in arrival order (p-queue, concurrency 1 per key);
 * - top-level turns share a global limit (`agents.max_concurrent`, turn-slots.ts); nested turns
 *   (subagents, depth > 0) bypass it, so a parent holding a slot never waits on a slot its own child
 *   needs (no deadlock); a turn waiting for the owner's answer parks its slot (gives it back) until
 *   the answer comes;
 * - an idle key's queue is dropped, so queues never grow with the number of sessions ever seen.
 */
import PQueue from "p-queue";
import type { TurnResult } from "../core/host.js";
import type { CoreContext } from "../runtime/context.js";
import { TurnSlots } from "./turn-slots.js";

/** Gives the turn's global slot back while `wait` runs (identity for nested turns). */
export type ParkSlot = <R>(wait: () => Promise<R>) => Promise<R>;

const NO_PARK: ParkSlot = (wait) => wait();

/** The turn running under a queue key, so it can be aborted. */
export interface RunningTurn {
  controller: AbortController;
  runId: string;
  requestId: string;
}

export class TurnQueue {
  private queues = new Map<string, PQueue>();
  private global: TurnSlots;
  private running = new Map<string, RunningTurn>();
  private inflight = new Set<Promise<TurnResult>>();

  constructor(ctx: CoreContext) {
    this.global = new TurnSlots(() => ctx.config().agents.max_concurrent);
    ctx.onConfig(() => this.global.pump());
  }

  /** The queue of a session key (created on first use, dropped when idle). */
  queueFor(key: string): PQueue {
    let q = this.queues.get(key);
    if (!q) {
      q = new PQueue({ concurrency: 1 });
      this.queues.set(key, q);
      const qq = q;
      q.addEventListener("idle", () => {
        if (qq.size === 0 && qq.pending === 0) this.queues.delete(key);
      });
    }
    return q;
  }

  /**
   * Queues `task` under `key`; top-level tasks (not `nested`) also wait for a global slot, and get
   * `park` to give it back while they wait for the owner.
   */
  add(key: string, nested: boolean, task: (park: ParkSlot) => Promise<TurnResult>): Promise<TurnResult> {
    return this.queueFor(key)
      .add(() => (nested ? task(NO_PARK) : this.global.run((park) => task(park))))
      .then((r) => r as TurnResult);
  }

  /** Global slots in use and turns waiting for one (metrics, tests). */
  slots(): { inUse: number; waiting: number } {
    return { inUse: this.global.inUse, waiting: this.global.waiting };
  }

  /** Tracks a turn's result until it settles, for `drain`. */
  track(result: Promise<TurnResult>): void {
    this.inflight.add(result);
  }
  untrack(result: Promise<TurnResult>): void {
    this.inflight.delete(result);
  }

  setRunning(key: string, r: RunningTurn): void {
    this.running.set(key, r);
  }
  /** Clears `key` when `runId` is still the turn running there. */
  clearRunning(key: string, runId: string): void {
    if (this.running.get(key)?.runId === runId) this.running.delete(key);
  }
  isRunning(key: string): boolean {
    return this.running.has(key);
  }
  /** Turns waiting under `key` (not the running one). */
  waiting(key: string): number {
    return this.queues.get(key)?.size ?? 0;
  }

  /** Like `abort`, but only when the running turn is `requestId` (a client stopping its own turn). */
  abortRequest(key: string, requestId: string): boolean {
    return this.running.get(key)?.requestId === requestId && this.abort(key);
  }

  abort(key: string): boolean {
    const r = this.running.get(key);
    if (!r) return false;
    r.controller.abort(new Error("aborted by user"));
    return true;
  }

  /** Runs `fn` in the key's queue: after the turns queued before it, before any later one. */
  async exclusive<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
    let out: { v: T } | undefined;
    await this.queueFor(key).add(async () => {
      out = { v: await fn() };
    });
    if (!out) throw new Error("the session queue dropped the task");
    return out.v;
  }

  /** Queued + running turns across all keys. */
  depth(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.size + q.pending;
    return n;
  }

  /** Waits for running turns up to `ms`, then aborts what is left (its partial text is stored). */
  async drain(ms: number): Promise<void> {
    if (this.inflight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, ms)));
    await Promise.race([Promise.allSettled([...this.inflight]).then(() => undefined), timeout]);
    clearTimeout(timer);
    for (const r of this.running.values()) r.controller.abort(new Error("daemon shutting down"));
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 2000))]);
  }
}
