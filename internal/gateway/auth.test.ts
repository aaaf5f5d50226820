/**
 * The failure limiter's global bound, on a fake clock: once all addresses together failed
 * 10 x max_failures times, an address that has failed waits on the shared lane even before its own
 * limit; an address that has not failed never waits, and a correct token is never refused.
 */
import { describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { FakeClock } from "../core/clock.js";
import { GatewayAuth } from "./auth.js";

const TOKEN = "the-right-token-0123456789";

describe("GatewayAuth global bound", () => {
  it("spreading guesses over many addresses buys one free guess each, then they queue", async () => {
    const cfg = configFromObject({
      gateway: { token: TOKEN, rate_limit: { max_failures: 3, window_s: 60 } },
    });
    const clock = new FakeClock();
    const auth = new GatewayAuth(() => cfg, clock, "generated");
    // 30 addresses, one wrong guess each: none is over its own limit of 3.
    for (let i = 0; i < 30; i++) {
      const r = await auth.check(`10.0.0.${i}`, `guess-${i}`);
      expect(r.ok).toBe(false);
    }
    // The global bound (10 x 3) is reached: a second guess from any of them now waits its turn.
    let settled = false;
    const second = auth.check("10.0.0.1", "guess-again").then((r) => ((settled = true), r));
    await Promise.resolve();
    expect(auth.waiting()).toBe(1);
    expect(settled).toBe(false);
    // An address that never failed is not slowed, and a correct token from it passes at once.
    expect(await auth.check("10.9.9.9", TOKEN)).toEqual({ ok: true });
    // Requests without any token are answered at once and change nothing.
    expect((await auth.check("10.0.0.1", undefined)).ok).toBe(false);
    expect(auth.waiting()).toBe(1);
    await clock.advance(20_000);
    expect((await second).ok).toBe(false);
    // The owner behind a guess on a failed address: delayed, then accepted, never 429.
    const owner = auth.check("10.0.0.1", TOKEN);
    await clock.advance(20_000);
    expect(await owner).toEqual({ ok: true });
    // A new window starts clean.
    await clock.advance(60_000);
    expect(auth.slowed("10.0.0.1")).toBe(false);
  });
});
