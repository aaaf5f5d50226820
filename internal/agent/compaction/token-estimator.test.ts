import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../models/types.js";
import { tokenSamples } from "./testdata/token-samples.js";
import {
  createTokenEstimator,
  defaultTokenEstimator,
  estimateTextTokens,
  IMAGE_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  PROMPT_OVERHEAD_TOKENS,
} from "./token-estimator.js";

/** Reference counts computed offline with gpt-tokenizer 4.0.0 (cl100k_base, o200k_base). */
const reference: Record<string, { cl100k: number; o200k: number }> = {
  prose: { cl100k: 198, o200k: 198 },
  chat: { cl100k: 133, o200k: 132 },
  code: { cl100k: 320, o200k: 323 },
  python: { cl100k: 168, o200k: 171 },
  json: { cl100k: 344, o200k: 344 },
  prettyJson: { cl100k: 207, o200k: 207 },
  shell: { cl100k: 314, o200k: 314 },
  markdown: { cl100k: 176, o200k: 177 },
  german: { cl100k: 148, o200k: 122 },
  russian: { cl100k: 129, o200k: 74 },
  chinese: { cl100k: 92, o200k: 59 },
  mixedIds: { cl100k: 231, o200k: 232 },
};

describe("default token estimator", () => {
  it("has a reference count for every sample", () => {
    expect(Object.keys(reference).sort()).toEqual(Object.keys(tokenSamples).sort());
  });

  it.each(Object.keys(tokenSamples))("%s: never below the real count and at most 40%% above", (name) => {
    const text = tokenSamples[name]!;
    const ref = reference[name]!;
    const real = Math.max(ref.cl100k, ref.o200k);
    const est = estimateTextTokens(text);
    expect(est).toBeGreaterThanOrEqual(real);
    expect(est).toBeLessThanOrEqual(Math.ceil(real * 1.4));
  });

  it("stays conservative over the whole corpus at once", () => {
    const all = Object.values(tokenSamples).join("\n\n");
    const real = Object.values(reference).reduce((a, r) => a + Math.max(r.cl100k, r.o200k), 0);
    expect(estimateTextTokens(all)).toBeGreaterThanOrEqual(real);
  });

  it("counts empty text as zero and adds framing per message", () => {
    expect(estimateTextTokens("")).toBe(0);
    const msgs: ChatMessage[] = [
      { role: "system", content: "" },
      { role: "user", content: "" },
    ];
    expect(defaultTokenEstimator.messages(msgs)).toBe(PROMPT_OVERHEAD_TOKENS + 2 * MESSAGE_OVERHEAD_TOKENS);
  });

  it("charges tool calls, tool names and images", () => {
    const plain = defaultTokenEstimator.message({ role: "assistant", content: "ok" });
    const withCall = defaultTokenEstimator.message({
      role: "assistant",
      content: "ok",
      tool_calls: [{ id: "call_1", name: "web_fetch", arguments: '{"url":"https://example.com/a/b"}' }],
    });
    expect(withCall - plain).toBeGreaterThan(15);
    const img = defaultTokenEstimator.message({
      role: "user",
      content: [
        { type: "text", text: "what is this?" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
    });
    expect(img).toBeGreaterThan(IMAGE_TOKENS);
  });

  it("accepts a pluggable text estimate", () => {
    const est = createTokenEstimator((s) => s.length);
    expect(est.message({ role: "user", content: "abcd" })).toBe(4 + MESSAGE_OVERHEAD_TOKENS);
  });
});

describe("prompt estimate over a long history", () => {
  const history = (n: number): ChatMessage[] =>
    Array.from({ length: n }, (_, i): ChatMessage =>
      i % 2 === 0
        ? { role: "user", content: `question ${i}` }
        : { role: "assistant", content: `answer ${i} ok` },
    );
  const plain = (ms: readonly ChatMessage[]): number =>
    ms.reduce((t, m) => t + defaultTokenEstimator.message(m), PROMPT_OVERHEAD_TOKENS);

  it("re-estimates only the messages that changed since the last prompt of the session", () => {
    let calls = 0;
    const est = createTokenEstimator((s) => {
      calls++;
      return estimateTextTokens(s);
    });
    const h = history(100);
    const first = [{ role: "system", content: "sys" } as ChatMessage, ...h];
    expect(est.messages(first)).toBe(plain(first));
    expect(calls).toBe(101);
    calls = 0;
    // Next turn: a new system message object, the same history objects, two new messages.
    const next = [{ role: "system", content: "sys" } as ChatMessage, ...h, ...history(2)];
    expect(est.messages(next)).toBe(plain(next));
    expect(calls).toBe(3);
  });

  it("stays exact when a prompt shares only part of the last one, or none of it", () => {
    const h = history(80);
    const sys: ChatMessage = { role: "system", content: "sys" };
    const prompts: ChatMessage[][] = [
      [sys, ...h],
      [sys, ...h.slice(0, 40), { role: "system", content: "[context] note" }, ...h.slice(40)],
      [sys, ...h.slice(0, 60)],
      [sys, ...h, ...h],
      [sys, ...h.slice(10)],
      [sys, ...h.slice(0, 50), { role: "user", content: [{ type: "text", text: "with parts" }] }],
      [sys, ...h],
    ];
    for (const p of prompts) expect(defaultTokenEstimator.messages(p)).toBe(plain(p));
  });
});
