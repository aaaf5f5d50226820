/**
 * Incremental compaction and headroom: a history that starts with an earlier summary is compacted as
 * that summary plus the new part, in one summariser call when it fits; a failing summariser never
 * loses the earlier summary; the compacted prompt sits at most at half the window.
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../models/types.js";
import { compactHistory, type Summarizer } from "./compact.js";
import { SUMMARY_MARKER, summaryMessageContent } from "./prompts.js";
import { compactionBudget, compactionTarget } from "./should-compact.js";

const turns = (n: number, from = 0): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => [
    { role: "user" as const, content: `question ${from + i} about ORD-${from + i} ${"detail ".repeat(80)}` },
    { role: "assistant" as const, content: `answer ${from + i} ${"words ".repeat(80)}` },
  ]).flat();

function recorder(reply: (p: ChatMessage[]) => string | Error): { log: ChatMessage[][]; fn: Summarizer } {
  const log: ChatMessage[][] = [];
  return {
    log,
    fn: (prompt) => {
      log.push(prompt);
      const r = reply(prompt);
      return r instanceof Error ? Promise.reject(r) : Promise.resolve(r);
    },
  };
}

const opts = { keepLastN: 4, observationMask: true, budgetTokens: 6_000, summaryContextWindow: 16_384 };

describe("incremental compaction", () => {
  it("updates the previous summary with the new part in one call", async () => {
    const previous = "- Facts and identifiers: ORD-OLD-1 shipped to Berlin.";
    const msgs = [{ role: "system" as const, content: summaryMessageContent(previous) }, ...turns(12)];
    const s = recorder(() => "- Facts and identifiers: ORD-OLD-1 shipped; ORD-0 to ORD-9 asked about.");
    const r = await compactHistory({ ...opts, messages: msgs, summarize: s.fn });
    expect(s.log).toHaveLength(1);
    const [system, user] = s.log[0]!;
    expect(system!.content).toMatch(/into the running summary of the earlier part/);
    expect(user!.content).toMatch(
      /^Previous summary:\n- Facts and identifiers: ORD-OLD-1 shipped to Berlin\./,
    );
    // The old summary is carried as such, not re-read as a transcript line with its marker.
    expect(user!.content).not.toContain(SUMMARY_MARKER);
    expect(user!.content).toContain("question 0 about ORD-0");
    expect(r.level).toBe("full");
    expect(r.summary).toContain("ORD-OLD-1");
    expect(r.messagesSummarised + r.keptMessages.length).toBe(msgs.length);
  });

  it("keeps the previous summary when the summariser fails", async () => {
    const previous = "- Commitments: call the bank about IBAN DE89370400440532013000.";
    const msgs = [{ role: "system" as const, content: summaryMessageContent(previous) }, ...turns(12)];
    const s = recorder(() => new Error("model down"));
    const r = await compactHistory({ ...opts, messages: msgs, summarize: s.fn });
    expect(r.level).toBe("partial");
    expect(r.summary).toContain("DE89370400440532013000");
    expect(r.summary).toMatch(/Not summarised: 20 earlier messages .* were removed without a summary/);
  });

  it("a first compaction that fits the summariser's window is one call", async () => {
    const s = recorder(() => "- summary");
    await compactHistory({ ...opts, messages: turns(12), summarize: s.fn });
    expect(s.log).toHaveLength(1);
  });
});

describe("compaction headroom", () => {
  const settings = { threshold: 0.8, reserveTokens: 4096 };
  it("caps the reply reserve at 1/8 of the window, so small windows are not mostly reserve", () => {
    expect(compactionBudget(settings, 16_384)).toBe(Math.floor(0.8 * 16_384) - 2_048);
    expect(compactionBudget(settings, 128_000)).toBe(102_400 - 4_096);
  });

  it("compacts down to at most half the window (minus the fixed prompt)", () => {
    const budget = compactionBudget(settings, 16_384) - 3_000;
    expect(compactionTarget(budget, 16_384, 3_000)).toBe(8_192 - 3_000);
    // A budget already under half the window stays as it is.
    expect(compactionTarget(2_000, 16_384, 3_000)).toBe(2_000);
  });
});
