/**
 * Budgets count the ledger's own figure, estimated and non-chat calls included, and stop a call whose
 * cost is known in advance before it is made (issue 48): a transcription of known length and an
 * embedding (its texts are counted first) that would cross the cap never reach the provider, while
 * the ones that fit are made and recorded. Through the agent host, the memory index and the media parts
 * as the daemon assembles them, against the fake providers on 127.0.0.1.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeEmbeddings, type FakeEmbeddings } from "../fakes/embeddings-server.js";
import { startFakeAudio, type FakeAudioServer } from "../fakes/audio-server.js";
import { FakeClock } from "../../internal/core/clock.js";
import { formatUsd } from "../../internal/core/money.js";
import { createMediaParts } from "../../internal/media/media-parts.js";
import { MediaFailure } from "../../internal/media/media-errors.js";
import { createSubagentHarness, OWNER_KEY, type SubagentHarness } from "../subagents/harness.js";

let fake: FakeOpenAI;
let emb: FakeEmbeddings;
let audio: FakeAudioServer;
let h: SubagentHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  emb = await startFakeEmbeddings();
  audio = await startFakeAudio();
  audio.seconds = 30; // what the provider reports it heard: the clips below are 30 seconds long
});
afterAll(async () => {
  await Promise.all([fake.close(), emb.close(), audio.close()]);
});
afterEach(async () => {
  await h?.agents.tasks.whenIdle();
  await h?.close();
  h = undefined;
});

const clip = (seconds: number) => ({
  data: Buffer.from("OggS-fake"),
  name: "voice.ogg",
  mime: "audio/ogg",
  durationS: seconds,
});

describe("budgets before a call of known cost", () => {
  it("refuse the transcription and the embedding that would cross the cap, counting estimates", async () => {
    const config = (budgets: Record<string, unknown>): Record<string, unknown> => ({
      models: {
        providers: {
          f: { base_url: fake.baseUrl, api_key: "sk-test" },
          e: { base_url: emb.baseUrl, api_key: "sk-test" },
          a: { base_url: audio.baseUrl, api_key: "sk-test" },
        },
        primary: "f/quiet-model",
        max_retries: 0,
        // $100 per 1M tokens: 1,000 tokens cost $0.10.
        pricing: { "f/quiet-model": { input: 100, output: 100 }, "e/emb-model": { input: 100, output: 0 } },
      },
      memory: { embeddings: { provider: "e", model: "emb-model" } },
      // $1 a minute: 30 seconds cost $0.50.
      media: { transcription: { provider: "a", model: "whisper-1", price_per_minute: 1 } },
      budgets,
    });
    h = await createSubagentHarness(config({}), { clock: new FakeClock(Date.UTC(2026, 2, 10, 9, 0)) });
    const db = h.core.db;
    const spent = (): number =>
      db.prepare<[], { usd: number | null }>("SELECT SUM(cost) AS usd FROM usage").get()?.usd ?? 0;

    // A chat call the provider reported nothing for: estimated, and counted like any other.
    fake.enqueue({ model: "quiet-model", text: "hello there", usage: false });
    expect((await h.submit("hi").result).text).toBe("hello there");
    const estimate = spent();
    expect(estimate).toBeGreaterThan(0);
    expect(
      db
        .prepare<[], { cost_source: string }>("SELECT cost_source FROM usage")
        .all()
        .map((r) => r.cost_source),
    ).toEqual(["estimated"]);

    // Room for one 30-second voice note and one 1,000-token embedding, not for a second of either.
    h.core.setConfig(config({ overall: { daily_usd: estimate + 0.5 + 0.15 } }));
    const media = createMediaParts(h.core.ctx, h.usage);
    const scope = { sessionKey: OWNER_KEY, agentId: "main", channel: "test" };
    expect(await media.audio.transcribe(clip(30), scope)).toBe("hello from a voice note");
    expect(audio.transcriptions).toHaveLength(1);
    expect(spent()).toBeCloseTo(estimate + 0.5, 9);

    const refused = await media.audio.transcribe(clip(30), scope).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(MediaFailure);
    expect((refused as MediaFailure).code).toBe("MEDIA_BUDGET");
    // The notice is the ledger's own figure: the estimate and the voice note.
    expect((refused as MediaFailure).message).toContain(`${formatUsd(estimate + 0.5)} has been spent`);
    expect(audio.transcriptions).toHaveLength(1); // never sent

    // Embeddings: a 1,000-token query fits ($0.10); a 2,000-token one ($0.20) would cross the cap.
    const fits = "car ".repeat(1000);
    await h.callTool("memory_search", { query: fits });
    expect(emb.texts).toContain(fits);
    expect(spent()).toBeCloseTo(estimate + 0.6, 9);
    const before = emb.requests["emb-model"] ?? 0;
    const crosses = "trip ".repeat(1600);
    await h.callTool("memory_search", { query: crosses });
    expect(emb.texts).not.toContain(crosses);
    expect(emb.requests["emb-model"] ?? 0).toBe(before); // never sent
    expect(spent()).toBeCloseTo(estimate + 0.6, 9);
    const kinds = db
      .prepare<[], { kind: string }>("SELECT kind FROM usage ORDER BY id")
      .all()
      .map((r) => r.kind);
    expect(kinds.filter((k) => k !== "embedding_index")).toEqual([
      "turn",
      "transcription",
      "embedding_search",
    ]);

    // A chat turn now meets the same figure: refused before the model is called.
    const calls = fake.requests.length;
    const blocked = await h.submit("and now?").result;
    expect(blocked.error?.code).toBe("BUDGET_EXCEEDED");
    expect(fake.requests).toHaveLength(calls);
  }, 60_000);
});
