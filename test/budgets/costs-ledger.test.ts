/**
 * The ledger against the provider's bill (issue 48): a mixed day through the agent host, the memory
 * index and the media parts as the daemon assembles them, against fake providers on 127.0.0.1 that
 * share one account (fake-billing.ts) and bill each model in a different shape (its own reported
 * cost; counts with cached input and reasoning; nothing at all; embeddings per token; transcription
 * per minute). The day: a voice note whose turn meets a 500 the provider billed, is retried and
 * delegates to a subagent (chat with tools); a memory search over freshly indexed notes; a
 * conversation long enough to overflow and be compacted; a heartbeat and a cron run. The ledger must
 * equal the bill within 0.5% in total and per model with every row naming its cause; `familiar usage
 * --reconcile` (the real CLI) on the fakes' exports must show no difference and exit 0, a
 * deliberately mispriced model must show its difference with the call that explains it and exit 1,
 * and a file that is no export must exit 2 with a one-line error.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { contextOverflowStep, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeEmbeddings, type FakeEmbeddings } from "../fakes/embeddings-server.js";
import { startFakeAudio, type FakeAudioServer } from "../fakes/audio-server.js";
import { FakeBilling } from "../fakes/fake-billing.js";
import { FakeClock } from "../../internal/core/clock.js";
import { createHeartbeatService } from "../../internal/heartbeat/heartbeat-service.js";
import { createCronService } from "../../internal/cron/cron-service.js";
import { createMediaParts } from "../../internal/media/media-parts.js";
import { attachmentMessage } from "../../internal/media/inbound-media.js";
import { parseExport } from "../../internal/agent/usage/provider-export.js";
import { reconcile } from "../../internal/agent/usage/reconcile.js";
import { runCli } from "../helpers/daemon.js";
import { createSubagentHarness, OWNER_KEY, waitFor, type SubagentHarness } from "../subagents/harness.js";

const START = Date.UTC(2026, 2, 10, 9, 0);
let fake: FakeOpenAI;
let emb: FakeEmbeddings;
let audio: FakeAudioServer;
let billing: FakeBilling;
let clock: FakeClock;
let h: SubagentHarness | undefined;

beforeAll(async () => {
  clock = new FakeClock(START);
  billing = new FakeBilling(
    {
      // Counts with cache and reasoning, priced by the owner's models.pricing.
      "main-model": { shape: "tokens", price: { input: 2, output: 8, cache_read: 0.5 } },
      // The provider's own figure (OpenRouter's usage.cost): no price configured at all.
      "helper-model": { shape: "reported", price: { input: 3, output: 12 } },
      // Nothing reported: estimated from the text, priced by models.pricing.
      "quiet-model": { shape: "nothing", price: { input: 1, output: 2 } },
      // Deliberately mispriced in the config below (the provider bills 3x).
      "odd-model": { shape: "tokens", price: { input: 6, output: 6 } },
      // Embeddings per input token (models.pricing); transcription per minute (the shipped table).
      "emb-model": { shape: "tokens", price: { input: 0.02, output: 0 } },
      "whisper-1": { shape: "tokens", price: { input: 0, output: 0, per_minute: 0.006 } },
    },
    () => clock.now(),
  );
  fake = await startFakeOpenAI({ billing });
  emb = await startFakeEmbeddings({ billing });
  audio = await startFakeAudio();
  audio.billing = billing;
  audio.seconds = 42;
  audio.transcripts = ["book the car for the trip to Lisbon"];
});
afterAll(async () => {
  await Promise.all([fake.close(), emb.close(), audio.close()]);
});
afterEach(async () => {
  await h?.agents.tasks.whenIdle();
  await h?.close();
  h = undefined;
});

const tokens = (prompt: number, completion: number, cached = 0, reasoning = 0): Record<string, unknown> => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: cached },
  completion_tokens_details: { reasoning_tokens: reasoning },
});

const isSummary = (msgs: { role: string; content?: unknown }[] | undefined): boolean => {
  const sys = typeof msgs?.[0]?.content === "string" ? msgs[0].content : "";
  return sys.startsWith("You compress") || sys.startsWith("You merge");
};

interface LedgerRow {
  kind: string | null;
  cost_source: string;
  model: string;
  request_id: string | null;
  session_key: string | null;
  agent_id: string | null;
  job_id: string | null;
}

describe("the ledger against the provider's bill", () => {
  it("equals the bill per model over a mixed day, names each row's cause, and reconciles", async () => {
    h = await createSubagentHarness(
      {
        models: {
          providers: {
            f: { base_url: fake.baseUrl, api_key: "sk-test" },
            e: { base_url: emb.baseUrl, api_key: "sk-test" },
            a: { base_url: audio.baseUrl, api_key: "sk-test" },
          },
          primary: "f/main-model",
          // One retry: the billed 500 is retried once.
          max_retries: 1,
          timeout_s: 30,
          pricing: {
            "f/main-model": { input: 2, output: 8, cache_read: 0.5 },
            "f/quiet-model": { input: 1, output: 2 },
            "f/odd-model": { input: 2, output: 2 },
            "e/emb-model": { input: 0.02, output: 0 },
          },
        },
        memory: { embeddings: { provider: "e", model: "emb-model" } },
        media: { transcription: { provider: "a", model: "whisper-1" } },
        agents: {
          defaults: { compact: { memory_flush: false } },
          main: {},
          helper: { model: "f/helper-model", description: "helps" },
        },
        heartbeat: { every: "30m", target: "test:owner", model: "f/quiet-model" },
        cron: {
          jobs: [
            { id: "digest", every: "1h", message: "digest", deliver: "test:owner", model: "f/quiet-model" },
            { id: "odd", every: "1h", message: "odd one", deliver: "test:owner", model: "f/odd-model" },
          ],
        },
      },
      { clock },
    );
    const ctx = h.core.ctx;
    const workspace = ctx.config().workspace;
    writeFileSync(join(workspace, "HEARTBEAT.md"), "- check the inbox\n");
    mkdirSync(join(workspace, "memory"), { recursive: true });
    writeFileSync(
      join(workspace, "memory", "travel.md"),
      "# Travel\n\nThe car for the Lisbon trip is a blue hatchback.\n",
    );

    // A voice note: transcribed (per minute) as the chat channels do, then its turn.
    const media = createMediaParts(ctx, h.usage);
    const voice = await attachmentMessage(
      {
        kind: "voice",
        name: "voice.ogg",
        uniqueId: "v1",
        mime: "audio/ogg",
        size: 9,
        durationS: 42,
        download: () => Promise.resolve(Buffer.from("OggS-fake")),
      },
      "",
      { config: () => ctx.config(), audio: media.audio, clock, channel: "test", typing: () => undefined },
      { sessionKey: OWNER_KEY, agentId: "main", channel: "test" },
    );
    expect(voice && "text" in voice ? voice.text : "").toContain("book the car for the trip to Lisbon");

    // Its turn: a 500 the provider had counted (billed), retried; a tool call delegating to the
    // helper (a subagent); then the answer (a tool loop).
    fake.enqueue(
      { model: "main-model", error: { status: 500, usage: tokens(9_000, 0, 6_000) } },
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "helper", message: "dig" } }],
        usage: tokens(12_000, 900, 8_000, 400),
      },
      { model: "helper-model", text: "dug it up", usage: tokens(3_000, 700) },
      { model: "main-model", text: "done", usage: tokens(14_000, 300, 12_000, 120) },
    );
    const voiceTurn = h.submit(voice && "text" in voice ? voice.text : "");
    // The router waits its backoff on the fake clock before the retry: move it on until it retried.
    await waitFor(async () => {
      await clock.advance(500);
      return fake.requests.length >= 2;
    }, "the retry after the 500");
    expect((await voiceTurn.result).text).toBe("done");

    // A memory search: the new notes are indexed first (embeddings), then the query is embedded.
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "memory_search", arguments: { query: "car for the trip" } }],
      },
      { model: "main-model", text: "the blue hatchback" },
    );
    expect((await h.submit("which car?").result).text).toBe("the blue hatchback");
    expect(emb.texts.at(-1)).toBe("car for the trip");

    // A long conversation on the main model, then a prompt the model refuses as too long: the
    // session is compacted (a summary call) and the call retried.
    fake.setHandler((req) =>
      isSummary(req.body?.messages) ? { text: "- The owner is planning a trip to Lisbon." } : { text: "ok" },
    );
    for (let i = 0; i < 8; i++) await h.submit(`tell me more about day ${i} of the Lisbon trip`).result;
    fake.enqueue(contextOverflowStep("main-model"));
    const compacted = await h.submit("and the hotel?").result;
    fake.setHandler(undefined);
    expect(compacted.text).toBe("ok");

    // A heartbeat and a cron run on the quiet model, which reports nothing.
    const heartbeat = createHeartbeatService(ctx, { host: h.agents.host, outbox: h.channels });
    const cron = createCronService(ctx, { host: h.agents.host, outbox: h.channels });
    await cron.start();
    fake.enqueue({ model: "quiet-model", text: "HEARTBEAT_OK", usage: false });
    expect((await heartbeat.runNow()).status).not.toBe("error");
    fake.enqueue({ model: "quiet-model", text: "the digest of the day, three lines long", usage: false });
    expect((await cron.runNow("digest")).status).toBe("ok");

    const db = h.core.db;
    const ledger = (model?: string): number =>
      db
        .prepare<[string | null, string | null], { usd: number | null }>(
          "SELECT SUM(cost) AS usd FROM usage WHERE (? IS NULL OR model = ?)",
        )
        .get(model ?? null, model ?? null)?.usd ?? 0;
    const within = (a: number, b: number): void => expect(Math.abs(a - b)).toBeLessThanOrEqual(0.005 * b);
    const models = ["main-model", "helper-model", "quiet-model", "emb-model", "whisper-1"];
    for (const m of models) {
      expect(billing.total(m)).toBeGreaterThan(0);
      within(ledger(m), billing.total(m));
    }
    within(ledger(), billing.total());

    // Every row says what caused it.
    const rows = db
      .prepare<[], LedgerRow>(
        "SELECT kind, cost_source, model, request_id, session_key, agent_id, job_id FROM usage ORDER BY id",
      )
      .all();
    const kinds = new Set(rows.map((r) => `${r.kind}:${r.cost_source}`));
    for (const k of [
      "transcription:priced",
      "failed:priced",
      "turn:priced",
      "subagent:reported",
      "tool_loop:priced",
      "embedding_index:priced",
      "embedding_search:priced",
      "compaction:priced",
      "heartbeat:estimated",
      "cron:estimated",
    ])
      expect(kinds, k).toContain(k);
    for (const r of rows) {
      const row = JSON.stringify(r);
      expect(r.kind, row).toBeTruthy();
      expect(r.agent_id, row).toBeTruthy();
      if (r.kind === "cron") expect(r.job_id, row).toBe("digest");
      if (r.kind === "embedding_index") {
        // Indexing runs for no turn: the memory index pays.
        expect(r.agent_id, row).toBe("memory");
        continue;
      }
      // Every other call names its session; all but a voice note (heard before its turn) its turn.
      expect(r.session_key, row).toBeTruthy();
      if (r.kind !== "transcription") expect(r.request_id, row).toMatch(/^(?!compaction$)./);
      if (["transcription", "failed", "compaction", "embedding_search", "turn"].includes(r.kind ?? ""))
        expect(r.session_key, row).toBe(OWNER_KEY);
    }
    const turnOf = (kind: string): string | null => rows.find((r) => r.kind === kind)?.request_id ?? null;
    // The billed 500 belongs to the voice note's turn; the summary to the turn that overflowed.
    expect(turnOf("failed")).toBe(turnOf("turn"));
    const turns = rows.filter((r) => r.kind === "turn").map((r) => r.request_id);
    expect(turnOf("compaction")).toBe(turns.at(-1));
    expect(turnOf("embedding_search")).toBe(turns[1]);

    // The fakes' own exports show no difference.
    const cfg = ctx.config();
    const viaRouter = reconcile(db, cfg, parseExport(billing.openRouterCsv()));
    expect(viaRouter.rows.map((r) => r.model).sort()).toEqual([...models].sort());
    expect(viaRouter.rows.filter((r) => !r.matches)).toEqual([]);
    const viaOpenAi = reconcile(db, cfg, parseExport(billing.openAiCostsCsv()));
    expect(viaOpenAi.rows.filter((r) => !r.matches)).toEqual([]);

    // The real CLI on the same database and exports.
    const dir = h.core.dir;
    const configPath = join(dir, "config.yaml");
    writeFileSync(configPath, `data_dir: ${join(dir, "data")}\nworkspace: ${workspace}\n`, { mode: 0o600 });
    const exportFile = (name: string, text: string): string => {
      const p = join(dir, name);
      writeFileSync(p, text, { mode: 0o600 });
      return p;
    };
    const cli = (file: string) => runCli(["usage", "--config", configPath, "--reconcile", file], dir);
    const agreeing = await cli(exportFile("openai-costs.csv", billing.openAiCostsCsv()));
    expect(agreeing.stderr).toBe("");
    expect(agreeing.stdout).toContain("no difference: the ledger matches the export");
    expect(agreeing.code).toBe(0);

    // A mispriced model: the provider bills 3x the configured price; the difference names the call.
    fake.enqueue({ model: "odd-model", text: "odd", usage: tokens(10_000, 1_000) });
    expect((await cron.runNow("odd")).status).toBe("ok");
    const after = reconcile(db, cfg, parseExport(billing.openAiCostsCsv()));
    const odd = after.rows.filter((r) => !r.matches);
    expect(odd.map((r) => r.model)).toEqual(["odd-model"]);
    expect(odd[0]!.difference).toBeCloseTo(billing.total("odd-model") - ledger("odd-model"), 8);
    expect(odd[0]!.explain.join(" ")).toMatch(/3\.00x .*price of odd-model is likely wrong/);
    expect(odd[0]!.suspects.map((c) => `${c.kind}:${c.jobId}`)).toEqual(["cron:odd"]);
    const perCall = reconcile(db, cfg, parseExport(billing.openRouterCsv()));
    expect(perCall.rows.filter((r) => !r.matches)[0]!.explain.join(" ")).toMatch(
      /the provider billed \$0\.066/,
    );
    const differing = await cli(exportFile("openrouter.csv", billing.openRouterCsv()));
    expect(differing.code).toBe(1);
    expect(differing.stdout).toMatch(/odd-model .*DIFFERS/);
    expect(differing.stdout).toMatch(/the provider billed \$0\.066/);
    expect(differing.stdout).toMatch(/cron request \S+ job odd/);

    // No export: a distinct code and one clear line, whether unreadable or of an unknown format.
    const missing = await cli(join(dir, "nowhere.csv"));
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toMatch(/^could not read .*nowhere\.csv: ENOENT/);
    const unknown = await cli(exportFile("other.csv", "date,amount\n2026-03-10,1.00\n"));
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toMatch(/other\.csv: /);
    await heartbeat.stop();
    await cron.stop();
  }, 120_000);
});
