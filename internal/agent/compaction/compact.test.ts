import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../models/types.js";
import { adaptiveChunkRatio, chunkTokenBudget, keepSplitIndex } from "./chunking.js";
import { compactHistory, maxSummaryTokens, type CompactOptions, type Summarizer } from "./compact.js";
import { SUMMARY_MARKER } from "./prompts.js";
import { idPattern, makeHistory, plantedIds } from "./testdata/history.js";
import { defaultTokenEstimator } from "./token-estimator.js";

/** A summariser that keeps every identifier it is shown, like a good model would. */
function idKeeper(log: ChatMessage[][] = []): Summarizer {
  return (prompt) => {
    log.push(prompt);
    const text = prompt.map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
    const ids = [...new Set(text.match(idPattern) ?? [])];
    return Promise.resolve(`- Reviewed weekly reports.\n- Identifiers: ${ids.join(", ") || "none"}`);
  };
}

const u = (content: string): ChatMessage => ({ role: "user", content });
const a = (content: string): ChatMessage => ({ role: "assistant", content });
const call = (id: string): ChatMessage => ({
  role: "assistant",
  content: "",
  tool_calls: [{ id, name: "t", arguments: "{}" }],
});
const res = (id: string): ChatMessage => ({ role: "tool", tool_call_id: id, name: "t", content: "r" });

function base(
  messages: ChatMessage[],
  summarize: Summarizer,
  extra: Partial<CompactOptions> = {},
): CompactOptions {
  return {
    messages,
    keepLastN: 10,
    observationMask: true,
    budgetTokens: 22_118, // 0.8 * 32768 - 4096
    summaryContextWindow: 32_768,
    summarize,
    ...extra,
  };
}

describe("keepSplitIndex", () => {
  it.each([
    { name: "plain tail", msgs: [u("1"), a("2"), u("3"), a("4")], n: 2, at: 2 },
    { name: "moves before tool results", msgs: [u("1"), call("x"), res("x"), a("4")], n: 2, at: 1 },
    {
      name: "moves before several parallel results",
      msgs: [
        u("1"),
        {
          ...call("x"),
          tool_calls: [
            { id: "x", name: "t", arguments: "{}" },
            { id: "y", name: "t", arguments: "{}" },
          ],
        },
        res("x"),
        res("y"),
        a("5"),
      ],
      n: 2,
      at: 1,
    },
    { name: "keep 0", msgs: [u("1"), a("2")], n: 0, at: 2 },
    { name: "keep more than there is", msgs: [u("1"), a("2")], n: 10, at: 0 },
  ])("$name", ({ msgs, n, at }) => {
    expect(keepSplitIndex(msgs, n)).toBe(at);
  });
});

describe("chunk sizing", () => {
  it("uses the base ratio for small messages and shrinks towards the minimum for big ones", () => {
    expect(adaptiveChunkRatio(100, 32_768)).toBe(0.4);
    expect(adaptiveChunkRatio(3_000, 32_768)).toBeCloseTo(0.4 - (3_000 * 1.2 * 2) / 32_768, 5);
    expect(adaptiveChunkRatio(30_000, 32_768)).toBeCloseTo(0.15, 10);
    expect(chunkTokenBudget(100, 32_768)).toBe(Math.floor(32_768 * 0.4) - 4096);
  });
});

describe("compactHistory", () => {
  it("full: keeps the tail verbatim, every planted id reaches and survives the summariser, fits the budget", async () => {
    const msgs = makeHistory(500, { plantAt: [3, 70, 150, 222, 301, 377, 420, 480] }); // 2,000 messages
    const log: ChatMessage[][] = [];
    const r = await compactHistory(base(msgs, idKeeper(log)));
    expect(r.level).toBe("full");
    // The 10th-last message is a tool result, so the kept tail starts one earlier at its tool call.
    expect(msgs[msgs.length - 10]!.role).toBe("tool");
    expect(r.keptMessages).toEqual(msgs.slice(msgs.length - 11));
    for (const id of plantedIds) expect(r.summary).toContain(id);
    expect(r.tokensAfter).toBeLessThanOrEqual(22_118);
    expect(r.tokensBefore).toBeGreaterThan(r.tokensAfter);
    expect(r.chunks).toBeGreaterThan(1);
    // Every summariser prompt fits the summary model's window.
    for (const p of log) expect(defaultTokenEstimator.messages(p)).toBeLessThan(32_768 - 4096);
    // Chunk prompts carry the identifier and masking instructions; the last call merges.
    expect(log[0]![0]!.content).toMatch(/character for character/);
    expect(log[0]![0]!.content).toMatch(/Drop greetings/);
    expect(log.at(-1)![0]!.content).toMatch(/merge/);
    expect(r.messagesSummarised + r.keptMessages.length).toBe(msgs.length);
  });

  it("never splits a tool call from its results at the keep boundary", async () => {
    for (let keep = 1; keep <= 12; keep++) {
      const msgs = makeHistory(20);
      const r = await compactHistory(base(msgs, idKeeper(), { keepLastN: keep }));
      expect(r.keptMessages[0]!.role).not.toBe("tool");
      expect(r.keptMessages.length).toBeGreaterThanOrEqual(keep);
      expect(r.keptIndexes[0]).toBe(msgs.length - r.keptMessages.length);
    }
  });

  it("keeps a trailing user message (the pending question) even with keepLastN 0", async () => {
    const msgs = [...makeHistory(10), u("what is the total for ORD-1193?")];
    const r = await compactHistory(base(msgs, idKeeper(), { keepLastN: 0 }));
    expect(r.level).toBe("full");
    expect(r.keptMessages).toEqual([msgs.at(-1)]);
    expect(r.messagesSummarised).toBe(msgs.length - 1);
    // Nothing pending (the last message is an answer): keepLastN 0 keeps nothing.
    const done = [...makeHistory(10), a("The total is 12.")];
    expect((await compactHistory(base(done, idKeeper(), { keepLastN: 0 }))).keptMessages).toEqual([]);
  });

  it("passes user instructions and the raw-turns template", async () => {
    const log: ChatMessage[][] = [];
    await compactHistory(
      base(makeHistory(30), idKeeper(log), { observationMask: false, instructions: "focus on revenue" }),
    );
    const sys = String(log[0]![0]!.content);
    expect(sys).toContain("Additional instructions from the user: focus on revenue");
    expect(sys).toContain("Keep the substance of every turn");
    expect(sys).not.toContain("Drop greetings");
  });

  it("strips tool-result details before summarising", async () => {
    const log: ChatMessage[][] = [];
    await compactHistory(base(makeHistory(30, { bigToolResult: 200 }), idKeeper(log)));
    const transcript = String(log[0]![1]!.content);
    expect(transcript).toMatch(/more characters of tool output omitted/);
    expect(transcript).not.toContain("NPS 41. ".repeat(30));
  });

  it("partial: a failing chunk is retried in halves, what still fails is noted", async () => {
    const msgs = makeHistory(500, { plantAt: [3] });
    let n = 0;
    const errors: string[] = [];
    const keeper = idKeeper();
    const r = await compactHistory(
      base(
        msgs,
        (p, s) => {
          n++;
          // The second chunk and both of its halves fail; everything else works.
          if (n >= 2 && n <= 4) return Promise.reject(new Error(`provider 500 #${n}`));
          return keeper(p, s);
        },
        { onError: (e) => errors.push((e as Error).message) },
      ),
    );
    expect(r.level).toBe("partial");
    expect(r.failedChunks).toBe(1);
    expect(errors).toEqual(["provider 500 #2", "provider 500 #3", "provider 500 #4"]);
    expect(r.summary).toContain("ORD-2024-77812");
    expect(r.summary).toMatch(/Not summarised: \d+ earlier messages/);
    expect(r.tokensAfter).toBeLessThanOrEqual(22_118);
  });

  it.each([
    ["throws", () => Promise.reject(new Error("unreachable"))],
    ["returns empty text", () => Promise.resolve("   ")],
    ["returns an oversized summary", () => Promise.resolve("word ".repeat(50_000))],
  ])("note: the summariser %s on every call", async (_name, f) => {
    const msgs = makeHistory(60);
    const r = await compactHistory(base(msgs, f as Summarizer));
    expect(r.level).toBe("note");
    expect(r.summary).toMatch(
      /^\d+ earlier messages \(\d+ from the user, \d+ from the assistant, \d+ tool results\) were removed/,
    );
    expect(r.summary).toContain("Tools used: read_file.");
    expect(r.summary).toContain("Round 49: can you check");
    expect(r.keptMessages).toHaveLength(11); // 10, moved back over a tool result
  });

  it("hard clear: nothing fits the budget, only a marker and the last user message remain", async () => {
    const msgs = [...makeHistory(5), u("what now? " + "x".repeat(50)), a("y".repeat(8_000))];
    const r = await compactHistory(
      base(msgs, () => Promise.reject(new Error("down")), { budgetTokens: 120, keepLastN: 2 }),
    );
    expect(r.level).toBe("hard_clear");
    expect(r.summary).toMatch(/was cleared/);
    expect(r.keptMessages).toEqual([msgs[msgs.length - 2]]);
    expect(r.keptIndexes).toEqual([msgs.length - 2]);
    expect(r.tokensAfter).toBeLessThanOrEqual(120);
  });

  it("shrinks an oversized kept tail instead of overflowing", async () => {
    const msgs = makeHistory(20, { bigToolResult: 2_000 }); // each tool result ~20K tokens
    const r = await compactHistory(base(msgs, idKeeper()));
    expect(r.level).toBe("full");
    expect(r.tokensAfter).toBeLessThanOrEqual(22_118);
    expect(r.keptMessages.length).toBeLessThan(10);
    if (r.keptMessages.length > 0) expect(r.keptMessages[0]!.role).not.toBe("tool");
  });

  it("noop when there is nothing older than the kept tail", async () => {
    const msgs = makeHistory(2);
    const r = await compactHistory(base(msgs, idKeeper()));
    expect(r.level).toBe("noop");
    expect(r.keptMessages).toEqual(msgs);
  });

  it("rethrows when the turn is aborted", async () => {
    const ac = new AbortController();
    const p = compactHistory(
      base(
        makeHistory(100),
        () => {
          ac.abort(new Error("turn aborted"));
          return Promise.reject(new Error("aborted"));
        },
        { signal: ac.signal },
      ),
    );
    await expect(p).rejects.toThrow("turn aborted");
  });

  it("caps the summary relative to the budget", () => {
    expect(maxSummaryTokens(22_118)).toBe(4000);
    expect(maxSummaryTokens(2_000)).toBe(500);
    expect(SUMMARY_MARKER).toBe("[Summary of earlier conversation]");
  });
});
