/** The embedder's router rules (retry with backoff on the fake clock, no retry on auth, cooldown) and the chunker. */
import { afterEach, describe, expect, it } from "vitest";
import { chunkMarkdown } from "../../internal/memory/chunk-markdown.js";
import { createMemoryHarness, type MemoryHarness } from "./memory-harness.js";

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Lets the pending HTTP exchange finish (real sockets), without advancing any clock. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise<void>((r) => setImmediate(r));
  expect(cond()).toBe(true);
}

describe("embedder", () => {
  it("retries a transient failure after the router's backoff, without a warning", async () => {
    h = await createMemoryHarness(undefined, {}, { maxRetries: 2 });
    h.fake.failNext(503, 1);
    const p = h.index.embedder.embed(["my automobile"]);
    await until(() => h!.clock.pending() === 1);
    expect(h.fake.requests["fake-small"]).toBe(1);
    await h.clock.advance(499);
    expect(h.fake.requests["fake-small"]).toBe(1);
    await h.clock.advance(1);
    const [v] = await p;
    expect(v).toHaveLength(128);
    expect(h.fake.requests["fake-small"]).toBe(2);
    expect(h.logs.filter((l) => l.level === 40)).toEqual([]);
  });

  it("does not retry refused credentials, cools down, and recovers after the cooldown", async () => {
    h = await createMemoryHarness(undefined, {}, { maxRetries: 2 });
    h.fake.failNext(401, 1);
    await expect(h.index.embedder.embed(["x"])).rejects.toMatchObject({ code: "EMBED_FAILED" });
    expect(h.fake.requests["fake-small"]).toBe(1);
    await expect(h.index.embedder.embed(["x"])).rejects.toMatchObject({ code: "EMBED_COOLDOWN" });
    expect(h.fake.requests["fake-small"]).toBe(1);
    expect(h.index.embedder.health()).toMatchObject({ state: "cooldown", model: "emb/fake-small" });
    await h.clock.advance(15_000);
    await expect(h.index.embedder.embed(["x"])).resolves.toHaveLength(1);
  });
});

describe("chunkMarkdown", () => {
  it("keeps heading paths and line ranges, splits long sections with overlap, keeps code fences whole", () => {
    const long = Array.from({ length: 12 }, (_, i) => `- item ${i} ${"word ".repeat(20)}`).join("\n");
    const text = `intro\n\n# A\n\n## B\npara one\nstill one\n\n\`\`\`\n# not a heading\n\`\`\`\n\n## C\n${long}\n`;
    const chunks = chunkMarkdown(text);
    expect(chunks[0]).toEqual({ heading: "", text: "intro", lineStart: 1, lineEnd: 1 });
    expect(chunks[1]).toEqual({
      heading: "A > B",
      text: "para one\nstill one\n```\n# not a heading\n```",
      lineStart: 6,
      lineEnd: 11,
    });
    const c = chunks.filter((x) => x.heading === "A > C");
    expect(c.length).toBeGreaterThan(1);
    expect(c.every((x) => x.text.length <= 800)).toBe(true);
    // The second chunk starts with the last item of the first (overlap).
    const lastOfFirst = c[0]!.text.split("\n").at(-1)!;
    expect(c[1]!.text.startsWith(lastOfFirst)).toBe(true);
    expect(c[1]!.lineStart).toBe(c[0]!.lineEnd);
    expect(c.at(-1)!.lineEnd).toBe(25);
  });
});
