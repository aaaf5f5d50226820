import { describe, expect, it } from "vitest";
import { estimateReason, formatUsd } from "./money.js";

describe("formatUsd", () => {
  it("prints one format: cents with two decimals, less with two significant digits, ≈ for estimates", () => {
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(0.15)).toBe("$0.15");
    expect(formatUsd(12.5)).toBe("$12.50");
    expect(formatUsd(0.0061)).toBe("$0.0061");
    expect(formatUsd(0.000048)).toBe("$0.000048");
    expect(formatUsd(0.000334)).toBe("$0.00033");
    expect(formatUsd(0.15, true)).toBe("≈$0.15");
  });

  it("gives the reason of an estimate in one line", () => {
    expect(estimateReason(2, { input: 5, output: 15 })).toBe(
      "≈: 2 call(s) to a model without a price in models.pricing, counted at budgets.default_price ($5 input / $15 output per 1M tokens)",
    );
  });
});
