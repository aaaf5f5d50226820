/**
 * The ONE contract suite for the exactly-once ledger of inbound platform events: the store a channel
 * consults before it answers, so a redelivered event (a Telegram update fetched again, a Discord
 * message replayed after RESUME) is never answered twice, across restarts. Telegram's `UpdateStore`
 * and Discord's `SeenStore` are this one concept with two platform shapes (a batch with an offset, a
 * claim per id); each harness adapts its store to `admit`.
 *
 * Usage (inside a vitest file): `runSeenIdsContract("discord", { handledTracking: false }, factory)`.
 */
import { afterEach, describe, expect, it } from "vitest";

/** What a ledger can do beyond dedupe. */
export interface SeenIdsCapabilities {
  /** Remembers which admitted ids were handled, so the unhandled ones are handled after a restart. */
  handledTracking: boolean;
}

/** What the suite needs to drive one ledger on a real SQLite file. */
export interface SeenIdsHarness {
  /** Records a delivery of these event ids; returns those never seen before, in delivery order. */
  admit(ids: readonly number[]): number[];
  /** Closes the database and builds the store again on the same file (a daemon restart). */
  restart(): void;
  /** (handledTracking) Admitted ids not marked handled yet, oldest first. */
  unhandled?(): number[];
  /** (handledTracking) Marks an admitted id handled. */
  markHandled?(id: number): void;
  cleanup(): void;
}

/** Registers the contract tests for one implementation. */
export function runSeenIdsContract(
  name: string,
  caps: SeenIdsCapabilities,
  factory: () => SeenIdsHarness,
): void {
  describe(`seen-ids contract: ${name}`, () => {
    let h: SeenIdsHarness | undefined;
    const make = (): SeenIdsHarness => (h = factory());
    afterEach(() => {
      h?.cleanup();
      h = undefined;
    });

    it("admits a new id once and refuses every redelivery", () => {
      const x = make();
      expect(x.admit([10, 11])).toEqual([10, 11]);
      expect(x.admit([10])).toEqual([]);
      expect(x.admit([11, 12])).toEqual([12]);
    });

    it("admits an id delivered twice in one batch once", () => {
      const x = make();
      expect(x.admit([5, 5, 6])).toEqual([5, 6]);
    });

    it("still refuses an id admitted before a restart", () => {
      const x = make();
      x.admit([1, 2, 3]);
      x.restart();
      expect(x.admit([2, 3, 4])).toEqual([4]);
    });

    it("stays exactly-once beyond any in-memory window (thousands of ids)", () => {
      const x = make();
      const ids = Array.from({ length: 2600 }, (_, i) => 1000 + i);
      for (let i = 0; i < ids.length; i += 100) x.admit(ids.slice(i, i + 100));
      expect(x.admit(ids.slice(0, 50))).toEqual([]);
      expect(x.admit([ids[1300]!, 99_999])).toEqual([99_999]);
    });

    it.skipIf(!caps.handledTracking)(
      "hands the admitted but unhandled ids back after a restart, in order",
      () => {
        const x = make();
        x.admit([7, 8, 9]);
        x.markHandled?.(8);
        x.restart();
        expect(x.unhandled?.()).toEqual([7, 9]);
        x.markHandled?.(7);
        x.markHandled?.(9);
        expect(x.unhandled?.()).toEqual([]);
        expect(x.admit([7, 8, 9])).toEqual([]);
      },
    );
  });
}
