import { describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { priceCall, tokenCost } from "./call-cost.js";
import { shippedPrice } from "./price-table.js";
import { billOf, estimatedUsage } from "./provider-bill.js";

const u = (input: number, output: number, cacheRead = 0, cacheWrite = 0, reasoning = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  reasoning,
  total: input + cacheWrite + output,
});
const cfg = (pricing: Record<string, unknown> = {}) =>
  configFromObject({ models: { providers: { p: { base_url: "http://127.0.0.1:9/v1" } }, pricing } }, "/tmp");

describe("the ledger's figure of a call", () => {
  it("takes the provider's figure over any price", () => {
    expect(priceCall(cfg(), { provider: "p", model: "gpt-4o", usage: u(1000, 10), reported: 0.42 })).toEqual({
      cost: 0.42,
      source: "reported",
    });
  });

  it("prices cached input, cache writes and output (reasoning included) by the provider's rules", () => {
    // 60k uncached * 3 + 40k cached * 0.3 + 10k written * 3.75 + 5k out * 15, per 1M
    const r = priceCall(cfg(), {
      provider: "p",
      model: "claude-sonnet-4-5-20250929",
      usage: u(1e5, 5e3, 4e4, 1e4, 2e3),
    });
    expect(r.source).toBe("priced");
    expect(r.cost).toBeCloseTo(0.18 + 0.012 + 0.0375 + 0.075, 10);
  });

  it("bills a prompt over the long-context threshold whole at the higher tier", () => {
    const p = shippedPrice("gemini-2.5-pro")!;
    expect(tokenCost(p, u(200_000, 1000))).toBeCloseTo((200_000 * 1.25 + 1000 * 10) / 1e6, 10);
    expect(tokenCost(p, u(200_001, 1000))).toBeCloseTo((200_001 * 2.5 + 1000 * 15) / 1e6, 10);
  });

  it("prices audio per minute and speech per character, and config wins over the shipped table", () => {
    expect(
      priceCall(cfg(), { provider: "p", model: "whisper-1", usage: u(0, 0), seconds: 90 }).cost,
    ).toBeCloseTo(0.009, 10);
    expect(priceCall(cfg(), { provider: "p", model: "tts-1", usage: u(0, 0), chars: 1000 }).cost).toBeCloseTo(
      0.015,
      10,
    );
    expect(
      priceCall(cfg({ "p/gpt-4o": { input: 1, output: 1 } }), {
        provider: "p",
        model: "gpt-4o",
        usage: u(1e6, 0),
      }).cost,
    ).toBe(1);
  });

  it("never prices a model by a looser neighbour: o3-pro is not o3", () => {
    expect(shippedPrice("o3-2025-04-16")).toBeDefined();
    expect(shippedPrice("o3-pro")).toBeUndefined();
    expect(priceCall(cfg(), { provider: "p", model: "o3-pro", usage: u(1e6, 0) })).toMatchObject({
      cost: 5,
      source: "default",
    });
  });

  it("marks counts estimated from the text, and reads the provider's cost from usage or a proxy header", () => {
    expect(
      priceCall(cfg(), { provider: "p", model: "gpt-4o", usage: u(4, 1), estimatedUsage: true }).source,
    ).toBe("estimated");
    expect(estimatedUsage({ messages: [{ role: "user", content: "12345678" }] }, 5)).toMatchObject({
      input: 2,
      output: 2,
    });
    expect(billOf({ cost: 0.01 }, "0.5", "gen-1")).toEqual({ cost: 0.01, callId: "gen-1" });
    expect(billOf({ prompt_tokens: 1 }, "0.5", undefined)).toEqual({ cost: 0.5 });
    expect(billOf({}, "junk", undefined)).toEqual({});
  });
});
