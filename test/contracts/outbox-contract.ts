/**
 * The ONE contract suite for the Outbox port (internal/core/outbox.ts): what agent, subagents, cron,
 * heartbeat and tools may rely on when they deliver. Every Outbox implementation runs it.
 *
 * Usage (inside a vitest file): `runOutboxContract("registry", async () => harness)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ChannelError, type Outbox } from "../../internal/core/outbox.js";

/** What the suite needs to drive and observe one outbox. */
export interface OutboxHarness {
  outbox: Outbox;
  /** A deliverable target `<channel>:<rest>` and what reached it since the start. */
  target: string;
  delivered(target: string): string[];
  /** Records that the owner wrote from `target` (what a channel does on an inbound DM). */
  ownerWroteFrom(target: string): void;
  /** A second outbox over the same persistent state (a restart), when the implementation persists. */
  reopen?(): Outbox;
  /** Makes the next deliveries to `target` fail at the platform. */
  failDeliveries(): void;
  cleanup(): Promise<void>;
}

/** Registers the contract tests for one implementation. */
export function runOutboxContract(name: string, factory: () => Promise<OutboxHarness>): void {
  describe(`outbox contract: ${name}`, () => {
    let h: OutboxHarness | undefined;
    const make = async (): Promise<OutboxHarness> => (h = await factory());
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });

    it("delivers to an explicit target", async () => {
      const x = await make();
      await x.outbox.deliver(x.target, "hello");
      expect(x.delivered(x.target)).toEqual(["hello"]);
    });

    it("knows no last target before the owner wrote, and refuses `last` with CHANNEL_UNKNOWN_TARGET", async () => {
      const x = await make();
      expect(x.outbox.lastTarget()).toBeUndefined();
      const err = await x.outbox.deliver("last", "hi").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect((err as ChannelError).code).toBe("CHANNEL_UNKNOWN_TARGET");
    });

    it("delivers `last` to where the owner last wrote", async () => {
      const x = await make();
      x.ownerWroteFrom(x.target);
      expect(x.outbox.lastTarget()).toBe(x.target);
      await x.outbox.deliver("last", "follow-up");
      expect(x.delivered(x.target)).toEqual(["follow-up"]);
    });

    it("treats `none` and an empty target as no-ops", async () => {
      const x = await make();
      await x.outbox.deliver("none", "dropped");
      await x.outbox.deliver("", "dropped");
      expect(x.delivered(x.target)).toEqual([]);
    });

    it("refuses a target of a channel that is not running, naming it", async () => {
      const x = await make();
      const err = await x.outbox.deliver("nosuchchannel:1", "hi").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect((err as ChannelError).code).toBe("CHANNEL_UNKNOWN_TARGET");
      expect((err as Error).message).toContain("nosuchchannel");
    });

    it("rejects (never swallows) a delivery the platform refused", async () => {
      const x = await make();
      x.failDeliveries();
      const err = await x.outbox.deliver(x.target, "hi").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
    });

    it("remembers the last target across a restart, when it persists", async () => {
      const x = await make();
      if (!x.reopen) return;
      x.ownerWroteFrom(x.target);
      expect(x.reopen().lastTarget()).toBe(x.target);
    });
  });
}
