import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { MAX_PENDING, PAIRING_ALPHABET, PAIRING_TTL_MS, PairingStore } from "./pairing.js";

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
});
