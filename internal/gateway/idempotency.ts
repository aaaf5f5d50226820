/**
 * Remembers the first answer to an idempotency key so a retried request (a reconnecting client, a
 * double click) returns it instead of running a second turn. Bounded by size and age.
 */
export class IdempotencyCache<T> {
  private entries = new Map<string, { at: number; value: T }>();
  constructor(
    private now: () => number,
    private ttlMs = 15 * 60_000,
    private max = 5000,
  ) {}

  get(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.now() - e.at > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: T): void {
    this.entries.delete(key);
    this.entries.set(key, { at: this.now(), value });
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}
