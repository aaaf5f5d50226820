/**
 * Issue 34 item 9: the streaming spec's vocabulary (`chunk-type`, `end-of-message`, `end-of-dialog`,
 * the `explain` chunk) as an opt-in of the `/api` stream (`?vocabulary=chunks`); without it the
 * stream is today's events. And the spec's loop-detector ids as config aliases.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { configFromObject } from "../../internal/config/load.js";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: "chunks-token-0123456789" } });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

type Chunk = Record<string, unknown> & {
  "chunk-type": string;
  content: string;
  "end-of-message": boolean;
  "end-of-dialog": boolean;
};

async function stream(
  query: string,
): Promise<{ status: number; events: { event: string; data: unknown }[] }> {
  const created = await fetch(`${h.base}/api/agents/main/sessions`, {
    method: "POST",
    headers: h.headers(),
    body: "{}",
  });
  const sid = ((await created.json()) as { id: string }).id;
  const r = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream${query}`, {
    method: "POST",
    headers: h.headers(),
    body: JSON.stringify({ message: "what time is it?" }),
  });
  return { status: r.status, events: await sseEvents(r) };
}

/** The SSE events of a response, parsed. */
async function sseEvents(r: Response): Promise<{ event: string; data: unknown }[]> {
  const text = await r.text();
  return text
    .split("\n\n")
    .filter((b) => b.includes("data: "))
    .map((b) => {
      const lines = b.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      const data = JSON.parse(lines.find((l) => l.startsWith("data: "))!.slice(6)) as unknown;
      return { event, data };
    });
}

describe("the /api stream in the spec's chunk vocabulary", () => {
  it("thought, action, observation, answer, explain, then end-of-dialog", async () => {
    h.fake.enqueue(
      { reasoning: "I should check the clock.", toolCalls: [{ name: "current_time", arguments: {} }] },
      { text: "It is noon.", chunkSize: 4 },
    );
    const { status, events } = await stream("?vocabulary=chunks");
    expect(status).toBe(200);
    expect(new Set(events.map((e) => e.event))).toEqual(new Set(["chunk"]));
    const chunks = events.map((e) => e.data as Chunk);
    const types = chunks.map((c) => c["chunk-type"]);
    expect(types).toContain("thought");
    expect(types.indexOf("action")).toBeGreaterThan(types.indexOf("thought"));
    expect(types.indexOf("observation")).toBeGreaterThan(types.indexOf("action"));
    expect(chunks.find((c) => c["chunk-type"] === "action")).toMatchObject({
      content: "current_time",
      name: "current_time",
      "end-of-message": true,
    });
    const answer = chunks
      .filter((c) => c["chunk-type"] === "answer")
      .map((c) => c.content)
      .join("");
    expect(answer).toBe("It is noon.");
    const explain = chunks.find((c) => c["chunk-type"] === "explain")!;
    expect(explain.explain_id).toMatch(/^urn:familiar:request:/);
    expect(JSON.stringify(explain.explain_triples)).toContain("what time is it?");
    const last = chunks.at(-1)!;
    expect(last).toMatchObject({
      "chunk-type": "answer",
      content: "",
      "end-of-message": true,
      "end-of-dialog": true,
    });
    expect(chunks.filter((c) => c["end-of-dialog"])).toHaveLength(1);
  });

  it("an error ends the dialog with an error chunk", async () => {
    h.fake.enqueue({ error: { status: 500 } });
    const { events } = await stream("?vocabulary=chunks");
    const last = events.at(-1)!.data as Chunk;
    expect(last).toMatchObject({ "chunk-type": "error", "end-of-message": true, "end-of-dialog": true });
  });

  it("the default stays today's events; an unknown vocabulary is a 400 naming it", async () => {
    h.fake.enqueue({ text: "hi" });
    const { events } = await stream("");
    expect(events[0]!.event).toBe("user-message");
    expect(events.at(-1)!.event).toBe("done");
    const bad = await stream("?vocabulary=xml");
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.events)).toBe("[]");
  });
});

describe("the one-shot /chat/stream honours the vocabulary too (issue 46)", () => {
  it("?vocabulary=chunks gives chunks ending in end-of-dialog; the default stays events", async () => {
    const oneShot = (query: string): Promise<Response> =>
      fetch(`${h.base}/api/agents/main/chat/stream${query}`, {
        method: "POST",
        headers: h.headers(),
        body: JSON.stringify({ message: "say hi" }),
      });
    h.fake.enqueue({ text: "Hi there.", chunkSize: 3 });
    const r = await oneShot("?vocabulary=chunks");
    expect(r.status).toBe(200);
    const events = await sseEvents(r);
    expect(new Set(events.map((e) => e.event))).toEqual(new Set(["chunk"]));
    const chunks = events.map((e) => e.data as Chunk);
    expect(
      chunks
        .filter((c) => c["chunk-type"] === "answer")
        .map((c) => c.content)
        .join(""),
    ).toBe("Hi there.");
    expect(JSON.stringify(chunks.find((c) => c["chunk-type"] === "explain"))).toContain("say hi");
    expect(chunks.at(-1)).toMatchObject({ "chunk-type": "answer", "end-of-dialog": true });

    h.fake.enqueue({ text: "Hi." });
    const plain = await sseEvents(await oneShot(""));
    expect(plain.at(-1)).toMatchObject({ event: "done", data: { reply: "Hi." } });
    expect((await oneShot("?vocabulary=xml")).status).toBe(400);
  });
});

describe("loop detector ids of the spec", () => {
  it("known_poll_no_progress and global_circuit_breaker are aliases", () => {
    const cfg = configFromObject(
      {
        timezone: "UTC",
        agents: {
          defaults: {
            loop_detection: {
              known_poll_no_progress: { warning: 3, critical: 6 },
              global_circuit_breaker: { limit: 9 },
            },
          },
        },
      },
      "/tmp",
    );
    expect(cfg.agents.defaults.loop_detection.known_poll).toMatchObject({ warning: 3, critical: 6 });
    expect(cfg.agents.defaults.loop_detection.circuit_breaker.limit).toBe(9);
  });
});
