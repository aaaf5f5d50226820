import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { configFromObject } from "../config/load.js";
import type { Config } from "../config/schema.js";
import { FakeClock } from "../core/clock.js";
import { createLogger } from "../log/logger.js";
import { startFakeOpenAI, contextOverflowStep, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { createModelRouter, echoStandInNotice, type ModelRouter } from "./router.js";
import { ModelError, type ModelRequest, type ModelStreamEvent } from "./types.js";

let primary: FakeOpenAI;
let backup: FakeOpenAI;
let clock: FakeClock;
let logLines: string[];
let config: Config;

function makeConfig(models: Record<string, unknown>): Config {
  return configFromObject({ timezone: "UTC", log: { level: "silent" }, models }, "/tmp");
}

function twoProviders(extra: Record<string, unknown> = {}): Config {
  return makeConfig({
    providers: {
      main: { base_url: primary.baseUrl, api_key: "sk-main" },
      backup: { base_url: backup.baseUrl, api_key: "sk-backup" },
    },
    primary: "main/gpt-4o",
    fallbacks: ["backup/llama3.1"],
    max_retries: 1,
    ...extra,
  });
}

function router(): ModelRouter {
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  });
  return createModelRouter({
    config: () => config,
    logger: createLogger({ level: "debug", destination: sink, pretty: false }),
    clock,
  });
}

/** Consumes a stream while moving the fake clock whenever the router sleeps (backoff). */
async function run(r: ModelRouter, req: ModelRequest): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  let settled = false;
  const p = (async () => {
    for await (const ev of r.stream(req)) events.push(ev);
    return events;
  })().finally(() => (settled = true));
  p.catch(() => {}); // handled by the caller's await below; avoids an unhandled-rejection report
  while (!settled) {
    if (clock.pending() > 0) await clock.advance(100);
    else await new Promise((res) => setTimeout(res, 2));
  }
  return p;
}

const hi: ModelRequest = { messages: [{ role: "user", content: "hi" }] };
const text = (evs: ModelStreamEvent[]): string => evs.map((e) => (e.type === "text" ? e.delta : "")).join("");
const done = (evs: ModelStreamEvent[]) => evs.find((e) => e.type === "done");

beforeEach(async () => {
  primary = await startFakeOpenAI({ apiKey: "sk-main" });
  backup = await startFakeOpenAI({ apiKey: "sk-backup" });
  clock = new FakeClock();
  logLines = [];
  config = twoProviders();
});
afterEach(async () => {
  await primary.close();
  await backup.close();
});

describe("model router", () => {
  it("streams a reply from the primary and reports who answered", async () => {
    primary.enqueue({ text: "Hello from the primary model", chunkSize: 4 });
    const evs = await run(router(), hi);
    expect(evs.filter((e) => e.type === "text").length).toBeGreaterThan(3);
    expect(text(evs)).toBe("Hello from the primary model");
    expect(done(evs)).toEqual({ type: "done", finishReason: "stop", provider: "main", model: "gpt-4o" });
    const usage = evs.find((e) => e.type === "usage");
    expect(usage?.type === "usage" && usage.usage.input).toBeGreaterThan(0);
    expect(primary.requests[0]?.headers.authorization).toBe("Bearer sk-main");
    expect(primary.requests[0]?.body?.stream_options).toEqual({ include_usage: true });
  });

  it("429 on the primary: the fallback answers and the primary cools down honouring retry-after", async () => {
    primary.enqueue({ error: { status: 429, retryAfter: 120 } });
    backup.enqueue({ text: "fallback here" });
    const r = router();
    const evs = await run(r, hi);
    expect(text(evs)).toBe("fallback here");
    expect(done(evs)).toMatchObject({ provider: "backup", model: "llama3.1" });
    expect(primary.requests).toHaveLength(1); // no retry of a rate-limited model when a fallback exists
    const cd = r.cooldowns();
    expect(cd).toHaveLength(1);
    expect(cd[0]).toMatchObject({ model: "main/gpt-4o", reason: "MODEL_RATE_LIMIT", failures: 1 });
    expect(cd[0]!.remainingMs).toBeGreaterThan(100_000);

    // While cooling, the primary is skipped.
    const evs2 = await run(r, hi);
    expect(done(evs2)).toMatchObject({ provider: "backup" });
    expect(primary.requests).toHaveLength(1);

    // After the cooldown it is tried again and a success clears the state.
    await clock.advance(121_000);
    expect(r.cooldowns()).toEqual([]);
    const evs3 = await run(r, hi);
    expect(done(evs3)).toMatchObject({ provider: "main" });
    expect(text(evs3)).toBe("echo: hi");
  });

  it("401 fails fast: no retry, no fallback, a message naming provider and model", async () => {
    config = twoProviders({
      providers: {
        main: { base_url: primary.baseUrl, api_key: "sk-wrong" },
        backup: { base_url: backup.baseUrl, api_key: "sk-backup" },
      },
      max_retries: 3,
    });
    const err = await run(router(), hi).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    const me = err as ModelError;
    expect(me.code).toBe("MODEL_AUTH");
    expect(me.message).toContain("main/gpt-4o");
    expect(me.message).toContain("models.providers.main.api_key");
    expect(me.info.status).toBe(401);
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
    expect(router().cooldowns()).toEqual([]);
  });

  it("500 is retried with backoff, then the fallback answers", async () => {
    primary.enqueue({ error: { status: 500 } }, { error: { status: 502 } });
    const r = router();
    const evs = await run(r, hi);
    expect(primary.requests).toHaveLength(2); // first try + max_retries (1)
    expect(done(evs)).toMatchObject({ provider: "backup" });
    expect(r.cooldowns()[0]).toMatchObject({ model: "main/gpt-4o", reason: "MODEL_SERVER" });
    expect(logLines.some((l) => l.includes("retrying main/gpt-4o"))).toBe(true);
  });

  it("a 500 followed by success on retry answers from the primary", async () => {
    primary.enqueue({ error: { status: 503 } });
    const r = router();
    const evs = await run(r, hi);
    expect(done(evs)).toMatchObject({ provider: "main" });
    expect(primary.requests).toHaveLength(2);
    expect(r.cooldowns()).toEqual([]);
  });

  it("a hanging model times out and the fallback answers", async () => {
    // Only the primary gets the short timeout, so a slow CI machine cannot time out the fallback too.
    config = twoProviders({
      providers: {
        main: { base_url: primary.baseUrl, api_key: "sk-main", timeout_s: 0.3 },
        backup: { base_url: backup.baseUrl, api_key: "sk-backup" },
      },
      max_retries: 0,
    });
    primary.enqueue({ hang: true });
    const evs = await run(router(), hi);
    expect(done(evs)).toMatchObject({ provider: "backup" });
    expect(logLines.some((l) => l.includes("MODEL_TIMEOUT"))).toBe(true);
  });

  it("a hanging only model ends in MODEL_TIMEOUT", async () => {
    config = makeConfig({
      providers: { main: { base_url: primary.baseUrl, api_key: "sk-main", timeout_s: 0.3 } },
      primary: "main/gpt-4o",
      max_retries: 0,
    });
    primary.enqueue({ hang: true, text: "" });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_TIMEOUT");
    expect(err.message).toContain("main/gpt-4o");
  });

  it("a malformed stream is MODEL_BAD_STREAM", async () => {
    config = makeConfig({
      providers: { main: { base_url: primary.baseUrl, api_key: "sk-main" } },
      primary: "main/gpt-4o",
      max_retries: 0,
    });
    primary.enqueue({ malformed: true });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_BAD_STREAM");
  });

  it("a truncated stream is MODEL_BAD_STREAM", async () => {
    config = makeConfig({
      providers: { main: { base_url: primary.baseUrl, api_key: "sk-main" } },
      primary: "main/gpt-4o",
      max_retries: 0,
    });
    primary.enqueue({ truncated: true });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_BAD_STREAM");
    expect(err.message).toContain("truncated");
  });

  it("never falls back after partial text reached the caller", async () => {
    primary.enqueue({ truncated: true, text: "half an ans" });
    const events: ModelStreamEvent[] = [];
    const err = await (async () => {
      for await (const ev of router().stream(hi)) events.push(ev);
    })().catch((e: unknown) => e);
    expect(text(events)).toBe("half an ans");
    expect((err as ModelError).code).toBe("MODEL_BAD_STREAM");
    expect(backup.requests).toHaveLength(0);
  });

  it("context overflow is thrown as-is without retry or fallback", async () => {
    primary.enqueue(contextOverflowStep());
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_CONTEXT_OVERFLOW");
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
  });

  it("an abort mid-stream stops the request and throws MODEL_ABORTED after the partial text", async () => {
    primary.enqueue({ hang: true, text: "partial answer" });
    const ac = new AbortController();
    const events: ModelStreamEvent[] = [];
    const err = await (async () => {
      for await (const ev of router().stream({ ...hi, signal: ac.signal })) {
        events.push(ev);
        if (text(events) === "partial answer") ac.abort();
      }
    })().catch((e: unknown) => e);
    expect(text(events)).toBe("partial answer");
    expect((err as ModelError).code).toBe("MODEL_ABORTED");
    expect(backup.requests).toHaveLength(0);
  });

  it("all models failing gives MODEL_ALL_FAILED naming each", async () => {
    config = twoProviders({ max_retries: 0 });
    primary.enqueue({ error: { status: 500 } });
    backup.enqueue({ error: { status: 503 } });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_ALL_FAILED");
    expect(err.message).toContain("main/gpt-4o");
    expect(err.message).toContain("backup/llama3.1");
  });

  it("a connection refused is MODEL_UNREACHABLE and falls back", async () => {
    const dead = await startFakeOpenAI();
    const deadUrl = dead.baseUrl;
    await dead.close();
    config = twoProviders({
      providers: {
        main: { base_url: deadUrl },
        backup: { base_url: backup.baseUrl, api_key: "sk-backup" },
      },
      max_retries: 0,
    });
    const r = router();
    const evs = await run(r, hi);
    expect(done(evs)).toMatchObject({ provider: "backup" });
    expect(r.cooldowns()[0]).toMatchObject({ model: "main/gpt-4o", reason: "MODEL_UNREACHABLE" });
  });

  it("the requested model goes first and config changes apply on the next call", async () => {
    const r = router();
    const evs = await run(r, { ...hi, model: "backup/qwen3:8b" });
    expect(done(evs)).toMatchObject({ provider: "backup", model: "qwen3:8b" });
    expect(backup.requests[0]?.model).toBe("qwen3:8b");
    config = twoProviders({ primary: "backup/llama3.1", fallbacks: [] });
    const evs2 = await run(r, hi);
    expect(done(evs2)).toMatchObject({ provider: "backup", model: "llama3.1" });
    expect(r.chain()).toEqual(["backup/llama3.1"]);
  });

  it("a model with a context window below 16K is refused without a call; the fallback answers", async () => {
    config = twoProviders({
      providers: {
        main: { base_url: primary.baseUrl, api_key: "sk-main", models: { tiny: { context_window: 8_000 } } },
        backup: { base_url: backup.baseUrl, api_key: "sk-backup" },
      },
      primary: "main/tiny",
    });
    backup.enqueue({ text: "from backup" });
    const evs = await run(router(), hi);
    expect(text(evs)).toBe("from backup");
    expect(primary.requests).toHaveLength(0);
    expect(logLines.some((l) => l.includes("main/tiny is 8000 tokens, below the minimum of 16000"))).toBe(
      true,
    );
    // As the only model: one clear configuration error, still no call.
    config = makeConfig({
      providers: {
        main: { base_url: primary.baseUrl, api_key: "sk-main", models: { tiny: { context_window: 8_000 } } },
      },
      primary: "main/tiny",
    });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_NOT_CONFIGURED");
    expect(err.message).toMatch(/context window of main\/tiny is 8000 tokens, below the minimum of 16000/);
    expect(primary.requests).toHaveLength(0);
  });

  it("an agent's own context_window counts when the model states none: a 12K agent is refused", async () => {
    config = configFromObject(
      {
        timezone: "UTC",
        log: { level: "silent" },
        models: {
          providers: {
            main: { base_url: primary.baseUrl, api_key: "sk-main" },
            backup: {
              base_url: backup.baseUrl,
              api_key: "sk-backup",
              models: { big: { context_window: 64_000 } },
            },
          },
          primary: "main/custom-model",
          fallbacks: ["backup/big"],
        },
        agents: { small: { context_window: 12_000 } },
      },
      "/tmp",
    );
    backup.enqueue({ text: "from backup" });
    const evs = await run(router(), { ...hi, agentId: "small" });
    expect(text(evs)).toBe("from backup");
    expect(primary.requests).toHaveLength(0);
    // Another agent (no window of its own) still uses the primary: the verdict is per agent.
    primary.enqueue({ text: "from main" });
    expect(text(await run(router(), hi))).toBe("from main");
  });

  it("an unknown provider fails with a clear configuration error", async () => {
    const err = (await run(router(), { ...hi, model: "nope/x" }).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_NOT_CONFIGURED");
    expect(err.message).toContain('provider "nope"');
  });
});

describe("echo fallback", () => {
  it("is used, with a prominent warning, only when no provider is configured", async () => {
    config = makeConfig({});
    const r = router();
    expect(r.usingEcho()).toBe(true);
    const evs = await run(r, { messages: [{ role: "user", content: "are you there" }] });
    expect(text(evs)).toBe("echo: are you there");
    expect(evs.filter((e) => e.type === "text").length).toBeGreaterThan(1);
    expect(done(evs)).toMatchObject({ provider: "echo", model: "echo" });
    expect(evs.some((e) => e.type === "usage")).toBe(true);
    expect(logLines.some((l) => l.includes("NO MODEL PROVIDER CONFIGURED") && l.includes('"warn"'))).toBe(
      true,
    );
  });

  it("is never used silently when a provider is configured", async () => {
    config = makeConfig({
      providers: { main: { base_url: primary.baseUrl, api_key: "sk-wrong" } },
      primary: "main/m",
    });
    const r = router();
    expect(r.usingEcho()).toBe(false);
    const err = (await run(r, hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_AUTH");
    expect(logLines.some((l) => l.includes("echo"))).toBe(false);
  });

  it("refuses to guess when providers exist but models.primary is unset", async () => {
    config = makeConfig({ providers: { main: { base_url: primary.baseUrl } } });
    const err = (await run(router(), hi).catch((e: unknown) => e)) as ModelError;
    expect(err.code).toBe("MODEL_NOT_CONFIGURED");
    expect(err.message).toContain("models.primary");
  });

  it("says so in the reply when it stands in for a model that was asked for, and warns once", async () => {
    // A primary naming a missing provider is a config error now (config check); a turn can still
    // ask for a model by name.
    config = makeConfig({});
    const r = router();
    r.chain();
    const evs = await run(r, { messages: [{ role: "user", content: "hello" }], model: "openai/gpt-4o" });
    expect(text(evs)).toBe(`${echoStandInNotice("openai/gpt-4o")}echo: hello`);
    expect(text(evs)).toContain("[openai/gpt-4o is not available: no model provider is configured");
    const asked = await run(r, { messages: [{ role: "user", content: "hi" }], model: "other/m" });
    expect(text(asked)).toBe(`${echoStandInNotice("other/m")}echo: hi`);
    expect(logLines.filter((l) => l.includes("NO MODEL PROVIDER CONFIGURED"))).toHaveLength(1);
  });

  it("can be chosen explicitly as echo/echo", async () => {
    const evs = await run(router(), { ...hi, model: "echo/echo" });
    expect(text(evs)).toBe("echo: hi");
    expect(primary.requests).toHaveLength(0);
  });
});
