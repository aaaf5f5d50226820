/** The flush turn's history fits its budget (issue 46): newest kept whole, oldest dropped first. */
import { describe, expect, it } from "vitest";
import { fitFlushHistory, type FlushMessage } from "./memory-flush.js";

const msg = (role: "user" | "assistant", chars: number, tag: string): FlushMessage => ({
  role,
  content: tag + "x".repeat(chars - tag.length),
});
const size = (h: readonly FlushMessage[]): number => h.reduce((n, m) => n + m.content.length, 0);

describe("fitFlushHistory", () => {
  it("keeps the newest messages that fit and drops the oldest", () => {
    const history = Array.from({ length: 40 }, (_, i) => msg(i % 2 ? "assistant" : "user", 400, `m${i}`));
    // 16,000 characters of history against a budget of 1,000 tokens (4,000 characters).
    const fitted = fitFlushHistory(history, 1000);
    expect(size(fitted)).toBeLessThanOrEqual(4000);
    expect(fitted).toHaveLength(10);
    expect(fitted.map((m) => m.content.slice(0, 3))).toEqual(
      history.slice(30).map((m) => m.content.slice(0, 3)),
    );
  });

  it("sends everything when it fits, and cuts a newest message too long on its own to its end", () => {
    const small = [msg("user", 40, "a"), msg("assistant", 40, "b")];
    expect(fitFlushHistory(small, 100)).toEqual(small);
    const huge = [
      msg("user", 40, "old"),
      { role: "user" as const, content: "start" + "y".repeat(9000) + "END" },
    ];
    const fitted = fitFlushHistory(huge, 500);
    expect(fitted).toHaveLength(1);
    expect(fitted[0]!.content).toHaveLength(2000);
    expect(fitted[0]!.content.endsWith("END")).toBe(true);
    expect(fitFlushHistory(huge, 0)).toEqual([]);
    expect(fitFlushHistory(huge, -50)).toEqual([]);
  });
});
