import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { MAX_PENDING, PAIRING_ALPHABET, PAIRING_TTL_MS, PairingStore } from "./pairing.js";
import { PairingWelcome } from "./pairing-welcome.js";

let core: TestCore;
afterEach(() => core?.close());

describe("PairingStore", () => {
  it("applies each dm_policy", () => {
    core = createTestCore();
    const s = new PairingStore(core.db, new FakeClock());
    const u = { id: "5" };
    expect(s.check("telegram", "open", [], u).kind).toBe("allow");
    expect(s.check("telegram", "disabled", ["5"], u)).toEqual({ kind: "ignore", reason: "disabled" });
    expect(s.check("telegram", "allowlist", [], u)).toEqual({ kind: "ignore", reason: "not_allowed" });
    expect(s.check("telegram", "allowlist", [5], u).kind).toBe("allow");
    expect(s.check("telegram", "pairing", [], u).kind).toBe("pair");
  });

  it("issues 8-character codes from the unambiguous alphabet, stable per user, expiring after 1 hour", async () => {
    core = createTestCore();
    const clock = new FakeClock();
    const s = new PairingStore(core.db, clock);
    const d = s.check("discord", "pairing", [], { id: "u1", name: "Ann" });
    if (d.kind !== "pair") throw new Error("expected pair");
    expect(d.code).toMatch(new RegExp(`^[${PAIRING_ALPHABET}]{8}$`));
    expect(d.fresh).toBe(true);
    const again = s.check("discord", "pairing", [], { id: "u1" });
    expect(again).toMatchObject({ kind: "pair", code: d.code, fresh: false });
    clock.jump(clock.now() + PAIRING_TTL_MS + 1);
    expect(s.approve(d.code)).toBeUndefined();
    expect(s.pending()).toHaveLength(0);
  });

  it("refuses new users when 3 codes are pending, keeping the oldest", () => {
    core = createTestCore();
    const s = new PairingStore(core.db, new FakeClock());
    const codes = Array.from({ length: MAX_PENDING }, (_, i) => s.requestCode("telegram", { id: `u${i}` }));
    expect(codes.every((c) => c.kind === "pair")).toBe(true);
    expect(s.requestCode("telegram", { id: "late" }).kind).toBe("pair_full");
    // Other channels have their own budget.
    expect(s.requestCode("discord", { id: "late" }).kind).toBe("pair");
    expect(s.pending("telegram").map((p) => p.userId)).toEqual(["u0", "u1", "u2"]);
  });

  it("approve adds the user to the stored allow list (per channel); revoke removes them", () => {
    core = createTestCore();
    const s = new PairingStore(core.db, new FakeClock());
    const d = s.requestCode("telegram", { id: "9", name: "Zed" });
    if (d.kind !== "pair") throw new Error("expected pair");
    expect(s.approve(d.code, "discord")).toBeUndefined();
    expect(s.approve(` ${d.code.slice(0, 4)}-${d.code.slice(4).toLowerCase()} `)?.userId).toBe("9");
    expect(s.isAllowed("telegram", "9", [])).toBe(true);
    expect(s.isAllowed("discord", "9", [])).toBe(false);
    expect(s.check("telegram", "pairing", [], { id: "9" }).kind).toBe("allow");
    expect(s.allowed("telegram")).toMatchObject([{ userId: "9", userName: "Zed" }]);
    expect(s.revoke("telegram", "9")).toBe(true);
    expect(s.isAllowed("telegram", "9", [])).toBe(false);
  });

  it("lists for a welcome only users approved by a code, each claimed once; a failed send gives it back", async () => {
    core = createTestCore();
    const s = new PairingStore(core.db, new FakeClock());
    // Added any other way (config, import) or on another channel: never greeted.
    s.allow("telegram", "from-import");
    const d = s.requestCode("telegram", { id: "stranger" });
    if (d.kind !== "pair") throw new Error("expected pair");
    expect(s.unwelcomed("telegram")).toEqual([]);
    s.approve(d.code);
    expect(s.unwelcomed("telegram").map((u) => u.userId)).toEqual(["stranger"]);
    expect(s.unwelcomed("discord")).toEqual([]);

    const sent: string[] = [];
    let fail: Error | undefined = new Error("telegram unreachable");
    const welcome = new PairingWelcome({
      store: s,
      channel: "telegram",
      send: async (userId) => {
        if (fail) throw fail;
        sent.push(userId);
      },
      ready: () => true,
      clock: new FakeClock(),
    });
    // Unreachable: not told, and the next sweep tries again.
    expect(await welcome.sweep()).toBe(0);
    expect(s.unwelcomed("telegram").map((u) => u.userId)).toEqual(["stranger"]);
    fail = undefined;
    // Two sweeps at once (the CLI's approval found by the timer while the console's call runs): once.
    expect(await Promise.all([welcome.sweep(), welcome.sweep()])).toEqual([1, 0]);
    expect(sent).toEqual(["stranger"]);
    expect(s.markWelcomed("telegram", "stranger")).toBe(false);
  });
});
