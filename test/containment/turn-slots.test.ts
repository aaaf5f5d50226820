/**
 * Issue 44, "a turn waiting for the owner does not hold a turn slot": the real TurnSlots with the
 * daemon's limit. Four turns parked on questions leave the slot free for the owner's own message in
 * another session; a parked turn gets a slot back before a fresh one when the answers come.
 */
import { describe, expect, it } from "vitest";
import { TurnSlots } from "../../internal/agent/turn-slots.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("turn slots", () => {
  it("turns waiting for the owner give their slot back; the owner's message runs meanwhile", async () => {
    const slots = new TurnSlots(() => 1);
    const answers = [0, 1, 2, 3].map(() => deferred());
    const order: string[] = [];
    const waiting = answers.map((a, i) =>
      slots.run(async (park) => {
        order.push(`ask ${i}`);
        await park(() => a.promise);
        order.push(`answered ${i}`);
      }),
    );
    // The owner's own message, in another session, while four turns wait for answers.
    await slots.run(async () => {
      order.push("owner");
    });
    expect(order.slice(0, 4).sort()).toEqual(["ask 0", "ask 1", "ask 2", "ask 3"]);
    expect(order[4]).toBe("owner");
    expect(slots.inUse).toBe(0);
    for (const a of answers) a.resolve();
    await Promise.all(waiting);
    expect(slots.inUse).toBe(0);
  });

  it("without parking a waiting turn holds the slot (the control), and the limit is kept", async () => {
    const slots = new TurnSlots(() => 1);
    const answer = deferred();
    const order: string[] = [];
    const held = slots.run(async () => {
      order.push("ask");
      await answer.promise;
      order.push("answered");
    });
    const owner = slots.run(async () => {
      order.push("owner");
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(["ask"]);
    expect(slots.waiting).toBe(1);
    answer.resolve();
    await Promise.all([held, owner]);
    expect(order).toEqual(["ask", "answered", "owner"]);
  });

  it("a parked turn coming back goes before turns that have not started", async () => {
    const slots = new TurnSlots(() => 1);
    const answer = deferred();
    const busy = deferred();
    const order: string[] = [];
    const parked = slots.run(async (park) => {
      await park(() => answer.promise);
      order.push("parked resumed");
    });
    const running = slots.run(async () => {
      order.push("running");
      await busy.promise;
    });
    await new Promise((r) => setImmediate(r));
    const fresh = slots.run(async () => {
      order.push("fresh");
    });
    answer.resolve();
    await new Promise((r) => setImmediate(r));
    busy.resolve();
    await Promise.all([parked, running, fresh]);
    expect(order).toEqual(["running", "parked resumed", "fresh"]);
  });
});
