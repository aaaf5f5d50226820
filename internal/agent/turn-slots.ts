/**
 * The global turn slots (`agents.max_concurrent`), with parking: a turn that waits for the owner
 * (an approval question) gives its slot back while it waits, so turns waiting for answers never
 * hold every slot and delay the owner's own message in another session.
 *
 * Invariants:
 * - at most `limit()` holders run at once (read on every acquire, so a hot reload applies);
 * - a parked holder gets a slot back before it continues, ahead of turns that have not started
 *   (they waited for the owner already; a fresh turn may start a little later instead);
 * - release is idempotent per holder: a turn that ends while parked frees nothing twice.
 */

interface Waiter {
  resolve: () => void;
}

/** A counting semaphore with a priority lane for holders coming back from parking. */
export class TurnSlots {
  private used = 0;
  private fresh: Waiter[] = [];
  private returning: Waiter[] = [];

  constructor(private limit: () => number) {}

  /** Slots in use now. */
  get inUse(): number {
    return this.used;
  }

  /** Turns waiting for a slot (fresh and returning). */
  get waiting(): number {
    return this.fresh.length + this.returning.length;
  }

  /** Runs `task` in a slot; `park` lets it give the slot back while it awaits something slow. */
  async run<T>(task: (park: <R>(wait: () => Promise<R>) => Promise<R>) => Promise<T>): Promise<T> {
    await this.acquire(this.fresh);
    let held = true;
    const park = async <R>(wait: () => Promise<R>): Promise<R> => {
      if (!held) return wait();
      held = false;
      this.release();
      try {
        return await wait();
      } finally {
        await this.acquire(this.returning);
        held = true;
      }
    };
    try {
      return await task(park);
    } finally {
      if (held) this.release();
      held = false;
    }
  }

  private acquire(lane: Waiter[]): Promise<void> {
    const ahead = lane === this.returning ? this.returning.length : this.returning.length + this.fresh.length;
    if (this.used < Math.max(1, this.limit()) && ahead === 0) {
      this.used++;
      return Promise.resolve();
    }
    return new Promise((resolve) => lane.push({ resolve }));
  }

  private release(): void {
    this.used--;
    this.pump();
  }

  /** Hands free slots to waiters, returning holders first (also after the limit grew). */
  pump(): void {
    while (this.used < Math.max(1, this.limit())) {
      const next = this.returning.shift() ?? this.fresh.shift();
      if (!next) return;
      this.used++;
      next.resolve();
    }
  }
}
