/** The per-chat backlog bound: refusals counted and told once per spell, slots freed, chats apart. */
import { describe, expect, it } from "vitest";
import { ChatBacklog } from "./chat-backlog.js";

describe("ChatBacklog", () => {
  it("refuses beyond the bound, tells the first refusal, then reports the rest once room returns", () => {
    const b = new ChatBacklog(() => 2);
    const a = b.enter("tg:1");
    const c = b.enter("tg:1");
    if (!a.ok || !c.ok) throw new Error("the first two are admitted");
    expect(b.enter("tg:1")).toEqual({ ok: false, tell: true, waiting: 2 });
    expect(b.enter("tg:1")).toEqual({ ok: false, tell: false, waiting: 2 });
    expect(b.enter("tg:1")).toEqual({ ok: false, tell: false, waiting: 2 });
    // Another chat has its own bound.
    expect(b.enter("tg:2").ok).toBe(true);
    // A reply made room: the two refusals not yet told are reported, once.
    expect(a.slot.leave()).toBe(2);
    expect(a.slot.leave()).toBe(0);
    expect(b.inFlight("tg:1")).toBe(1);
    // A new spell tells its first refusal again.
    const d = b.enter("tg:1");
    expect(d.ok).toBe(true);
    expect(b.enter("tg:1")).toEqual({ ok: false, tell: true, waiting: 2 });
    expect(c.slot.leave()).toBe(0);
    if (d.ok) expect(d.slot.leave()).toBe(0);
    expect(b.inFlight("tg:1")).toBe(0);
  });

  it("follows a lowered bound at once", () => {
    let max = 3;
    const b = new ChatBacklog(() => max);
    expect(b.enter("d:1").ok).toBe(true);
    max = 1;
    expect(b.enter("d:1")).toEqual({ ok: false, tell: true, waiting: 1 });
  });
});
