import { afterEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../internal/session/session-store.js";
import { createMemoryHarness, type MemoryHarness } from "./memory-harness.js";

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NOTES = `# Notes

## Car
My automobile is a blue Skoda Octavia.

## Garden
The tomatoes go in the sunny bed by the fence.

## Kitchen
The kettle descaler is under the sink.
`;

const EMB = { provider: "emb", model: "fake-small", batch_size: 8 };

describe("incremental embeddings", () => {
  it("re-embeds only the chunks whose text changed", async () => {
    h = await createMemoryHarness();
    h.write("MEMORY.md", NOTES);
    h.index.refresh();
    await h.index.settle();
    expect(h.fake.inputs["fake-small"]).toBe(3);
    expect(h.index.status()).toMatchObject({ chunks: 3, vectors: 3, pending: 0, dimensions: 128 });

    // One section edited, one line added above all of them (moves every line range).
    h.write("MEMORY.md", `Intro line.\n${NOTES.replace("sunny bed", "shady bed")}`);
    const before = h.fake.texts.length;
    const hits = await h.index.search("where do the tomatoes go");
    const embedded = h.fake.texts.slice(before);
    // The new intro chunk, the changed garden chunk, then the query: nothing else.
    expect(embedded).toEqual([
      "Intro line.",
      "Notes > Garden\nThe tomatoes go in the shady bed by the fence.",
      "where do the tomatoes go",
    ]);
    expect(hits[0]).toMatchObject({ where: "MEMORY.md", line: 8, lineEnd: 8 });
    // Unchanged chunks kept their vectors but follow the new line numbers.
    const car = await h.index.search("vehicle");
    expect(car[0]).toMatchObject({ line: 5, match: "meaning" });
    expect(h.index.status()).toMatchObject({ chunks: 4, vectors: 4, pending: 0 });
  });

  it("an outage still returns keyword hits, warns once, and fills the vectors in later", async () => {
    h = await createMemoryHarness();
    h.write("MEMORY.md", NOTES);
    h.fake.setDown(503);
    for (let i = 0; i < 3; i++) {
      const hits = await h.index.search("Skoda");
      expect(hits[0]?.snippet).toContain("**Skoda**");
      expect(hits[0]?.match).toBe("keyword");
    }
    const warnings = h.logs.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toContain("memory embeddings unavailable");
    expect(h.index.status()).toMatchObject({ vectors: 0, pending: 3, embeddings: { state: "cooldown" } });
    // During the cooldown nobody calls the provider again (one request: the first fill).
    expect(h.fake.requests["fake-small"]).toBe(1);

    h.fake.setDown(undefined);
    await h.clock.advance(16_000);
    const hits = await h.index.search("which vehicle do I own");
    expect(hits[0]?.snippet).toContain("Skoda");
    expect(hits[0]?.match).toBe("meaning");
    expect(h.index.status()).toMatchObject({ vectors: 3, pending: 0, embeddings: { state: "ok" } });
    expect(h.logs.some((l) => l.msg === "memory embeddings available again")).toBe(true);
  });

  it("a model change rebuilds every vector in the background, with progress", async () => {
    h = await createMemoryHarness();
    h.write("MEMORY.md", NOTES);
    h.index.refresh();
    await h.index.settle();
    expect(h.index.status()).toMatchObject({ dimensions: 128, storedModel: "emb/fake-small" });

    h.setMemory({ embeddings: { ...EMB, model: "fake-large" } });
    h.index.refresh();
    expect(h.index.status().fill).toMatchObject({ running: true, rebuild: true, total: 3 });
    await h.index.settle();
    expect(h.fake.inputs["fake-large"]).toBe(3);
    expect(h.index.status()).toMatchObject({
      dimensions: 192,
      storedModel: "emb/fake-large",
      vectors: 3,
      pending: 0,
    });
    expect(h.logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        "memory index: embedding model changed to emb/fake-large; rebuilding 3 chunks in the background",
        "memory index: embedded 3/3 chunks",
      ]),
    );
    const hits = await h.index.search("automobile");
    expect(hits[0]).toMatchObject({ line: 4, match: "both" });

    // `familiar memory reindex`: everything again, same model.
    expect(h.index.reindex()).toEqual({ chunks: 3, embedding: true });
    await h.index.settle();
    expect(h.fake.inputs["fake-large"]).toBe(3 + 3 + 1);
  });

  it("embeds past conversation turns only with memory.sessions, and links to the session and turn", async () => {
    h = await createMemoryHarness();
    const store = new SessionStore(h.db, () => Date.UTC(2026, 1, 3, 9));
    const s = store.ensure("agent:main:telegram:owner", "main");
    store.append(s.id, { role: "user", content: "For the vacation in June we settle on Crete, two weeks." });
    store.append(s.id, { role: "assistant", content: "Great, Crete for two weeks in June it is." });
    store.append(s.id, { role: "tool", content: "vacation vacation vacation", toolCallId: "t1" });
    // Off: transcripts stay local (keyword index only); nothing is sent to the embedding model.
    expect(await h.index.search("what did we decide about the trip", { sources: "sessions" })).toEqual([]);
    expect(h.fake.texts.some((t) => t.includes("Crete"))).toBe(false);

    h.setMemory({ embeddings: EMB, sessions: true });
    h.index.refresh();
    await h.index.settle();
    expect(h.fake.texts.filter((t) => t.includes("Crete"))).toHaveLength(2);
    expect(h.fake.texts.some((t) => t.includes("vacation vacation"))).toBe(false);
    const hits = await h.index.search("what did we decide about the trip", { sources: "sessions" });
    expect(hits[0]).toMatchObject({
      source: "session",
      date: "2026-02-03",
      session: { key: "agent:main:telegram:owner" },
      match: "meaning",
    });
    expect(hits[0]?.session?.messageId).toBeGreaterThan(0);
  });

  it("counts embedding tokens for usage", async () => {
    h = await createMemoryHarness();
    h.write("MEMORY.md", NOTES);
    await h.index.search("car");
    expect(h.usage.length).toBeGreaterThanOrEqual(2);
    expect(h.usage.every((u) => u.provider === "emb" && u.model === "fake-small" && u.tokens > 0)).toBe(true);
  });
});
