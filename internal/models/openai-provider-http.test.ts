/**
 * The provider's HTTP path (undici dispatcher + SSE parser) against real sockets on 127.0.0.1: the
 * scripted fake OpenAI server, and raw node:http servers for what a well-behaved server never does
 * (bytes cut anywhere, bodies that break off, `[DONE]` without the end of the body). Errors are
 * compared with what the `openai` SDK's own client threw for the same answer, classified the same way.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { classifyModelError } from "./classify-error.js";
import { createOpenAIProvider, type Provider } from "./openai-provider.js";
import { ModelError, type ModelStreamEvent } from "./types.js";

interface RawServer {
  baseUrl: string;
  /** TCP connections accepted so far. */
  connections: () => number;
  close: () => Promise<void>;
}

const open: { close: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function rawServer(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<RawServer> {
  let connections = 0;
  const srv = createServer((req, res) => {
    req.resume();
    req.on("end", () => handle(req, res));
  });
  srv.on("connection", (s) => {
    connections++;
    s.setNoDelay(true);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const s: RawServer = {
    baseUrl: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
  open.push(s);
  return s;
}

async function fakeOpenAI(): Promise<FakeOpenAI> {
  const fake = await startFakeOpenAI({ apiKey: "sk-h" });
  open.push(fake);
  return fake;
}

const provider = (baseUrl: string, timeoutMs = 10_000): Provider =>
  createOpenAIProvider({ name: "p", baseUrl, apiKey: "sk-h", timeoutMs });

async function collect(p: Provider, signal?: AbortSignal): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of p.stream({ model: "m", messages: [{ role: "user", content: "hi" }], signal }))
    out.push(ev);
  return out;
}

async function failure(p: Provider, signal?: AbortSignal): Promise<ModelError> {
  const err = await collect(p, signal).then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}

/** What the openai SDK (over fetch) threw for the same server, classified as the provider did. */
async function sdkFailure(baseUrl: string): Promise<ModelError> {
  const client = new OpenAI({ baseURL: baseUrl, apiKey: "sk-h", maxRetries: 0, logLevel: "off" });
  const err = await (async () => {
    const s = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const _ of s) void _;
    return new Error("expected a failure");
  })().catch((e: unknown) => e);
  return classifyModelError(err, { provider: "p", model: "m", baseUrl });
}

const sse = (o: unknown): string => `data: ${JSON.stringify(o)}\n\n`;
const delta = (content: string, finish: string | null = null): string =>
  sse({
    id: "c",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  });
const USAGE = sse({
  id: "c",
  choices: [],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});
const text = (evs: ModelStreamEvent[]): string => evs.map((e) => (e.type === "text" ? e.delta : "")).join("");

describe("openai provider over HTTP", () => {
  it("reads a stream whose bytes are cut anywhere, inside UTF-8 characters too", async () => {
    const body = Buffer.from(delta("ünï") + delta("cødé ✓ 🦊", "stop") + USAGE + "data: [DONE]\n\n");
    const srv = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // One byte per write, each flushed on its own: every boundary is a chunk boundary.
      let i = 0;
      const next = (): void => {
        if (i >= body.length) return void res.end();
        res.write(body.subarray(i, ++i), () => setImmediate(next));
      };
      next();
    });
    const evs = await collect(provider(srv.baseUrl));
    expect(text(evs)).toBe("ünïcødé ✓ 🦊");
    expect(evs.map((e) => e.type).slice(-2)).toEqual(["usage", "done"]);
  });

  it("reuses keep-alive connections across calls", async () => {
    const body = delta("ok", "stop") + USAGE + "data: [DONE]\n\n";
    const srv = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
    const p = provider(srv.baseUrl);
    for (let i = 0; i < 6; i++) expect(text(await collect(p))).toBe("ok");
    // undici's pool marks a connection free on its next tick, so a call started at once after the
    // previous one ended may open a second; from then on both are reused.
    expect(srv.connections()).toBeLessThanOrEqual(2);
  });

  it("keeps the connection when the end of a chunked body comes after [DONE], in its own packet", async () => {
    const srv = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // `[DONE]` is read before the terminating chunk arrives.
      res.write(delta("ok", "stop") + "data: [DONE]\n\n", () => setImmediate(() => res.end()));
    });
    const p = provider(srv.baseUrl);
    for (let i = 0; i < 6; i++) expect(text(await collect(p))).toBe("ok");
    // A call may start before the previous body ended (a second connection), but none is destroyed.
    expect(srv.connections()).toBeLessThanOrEqual(2);
  });

  it("ends at [DONE] even when the server keeps the body open, and frees that connection", async () => {
    const srv = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(delta("ok", "stop") + "data: [DONE]\n\n"); // and never ends
    });
    const p = provider(srv.baseUrl);
    expect((await collect(p)).at(-1)).toMatchObject({ type: "done", finishReason: "stop" });
    expect((await collect(p)).at(-1)).toMatchObject({ type: "done", finishReason: "stop" });
    expect(srv.connections()).toBe(2);
  });

  it("keeps a slow stream alive while bytes arrive, and times out a silent one", async () => {
    const fake = await fakeOpenAI();
    // 8 parts 60 ms apart: about 0.5 s in all, never 0.2 s of silence.
    fake.enqueue({ text: "a slow but steady answer", chunkSize: 4, delayMs: 60 });
    const p = provider(fake.baseUrl, 200);
    expect(text(await collect(p))).toBe("a slow but steady answer");
    fake.enqueue({ hang: true, text: "then silence" });
    const silent = await failure(p);
    expect(silent.code).toBe("MODEL_TIMEOUT");
    expect(silent.message).toBe("p/m sent nothing for 0.2s");
  });

  it("times out a server that never sends its response head", async () => {
    const srv = await rawServer(() => undefined);
    const err = await failure(provider(srv.baseUrl, 150));
    expect(err.code).toBe("MODEL_TIMEOUT");
    expect(err.transient).toBe(true);
  });

  it("an abort mid-stream stops the call with MODEL_ABORTED and the next call still answers", async () => {
    const fake = await fakeOpenAI();
    fake.enqueue({ hang: true, text: "partial" });
    const p = provider(fake.baseUrl);
    const ac = new AbortController();
    const seen: string[] = [];
    const err = await (async () => {
      for await (const ev of p.stream({
        model: "m",
        messages: [{ role: "user", content: "x" }],
        signal: ac.signal,
      })) {
        seen.push(ev.type);
        ac.abort();
      }
    })().catch((e: unknown) => e);
    expect((err as ModelError).code).toBe("MODEL_ABORTED");
    expect(seen).toEqual(["text"]);
    expect(text(await collect(p))).toBe("echo: hi");
  });

  it("connection refused is MODEL_UNREACHABLE with the socket's reason, as through the SDK", async () => {
    const srv = await rawServer(() => undefined);
    const { baseUrl } = srv;
    await srv.close();
    const err = await failure(provider(baseUrl));
    expect(err.code).toBe("MODEL_UNREACHABLE");
    expect(err.message).toContain("(ECONNREFUSED)");
    expect(err.message).toBe((await sdkFailure(baseUrl)).message);
  });

  it("a body that breaks off mid-stream is MODEL_UNREACHABLE, as through the SDK", async () => {
    const srv = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(delta("half"), () => res.destroy());
    });
    const err = await failure(provider(srv.baseUrl));
    const sdk = await sdkFailure(srv.baseUrl);
    expect(err.code).toBe("MODEL_UNREACHABLE");
    expect([err.code, err.message]).toEqual([sdk.code, sdk.message]);
  });

  it("types HTTP refusals with the provider's message, code for code and word for word as the SDK", async () => {
    const fake = await fakeOpenAI();
    const cases = [
      { error: { status: 401, message: "Incorrect API key provided: sk-h***" } },
      { error: { status: 429, message: "Rate limit reached for requests", retryAfter: 7 } },
      { error: { status: 500, message: "The server had an error while processing your request." } },
      { error: { status: 400, message: "Invalid 'messages': empty array.", code: "invalid_value" } },
    ];
    const expected = ["MODEL_AUTH", "MODEL_RATE_LIMIT", "MODEL_SERVER", "MODEL_BAD_REQUEST"];
    for (const [i, step] of cases.entries()) {
      fake.enqueue(step);
      const ours = await failure(provider(fake.baseUrl));
      fake.enqueue(step);
      const sdk = await sdkFailure(fake.baseUrl);
      expect(ours.code).toBe(expected[i]);
      expect(ours.message).toContain(step.error.message.replace(/\.$/, ""));
      expect([ours.code, ours.message, ours.info.status, ours.info.retryAfterMs]).toEqual([
        sdk.code,
        sdk.message,
        sdk.info.status,
        sdk.info.retryAfterMs,
      ]);
    }
  });

  it("reads non-JSON and error-less error bodies, and error events inside the stream, as the SDK did", async () => {
    const answers: ((res: ServerResponse) => void)[] = [
      (res) => res.writeHead(502, { "content-type": "text/html" }).end("<h1>502 Bad Gateway</h1>"),
      (res) => res.writeHead(503, { "content-type": "application/json" }).end('{"detail":"down"}'),
      (res) =>
        res
          .writeHead(200, { "content-type": "text/event-stream" })
          .end(delta("a") + sse({ error: { message: "Overloaded", type: "server_error", code: null } })),
      (res) =>
        res
          .writeHead(200, { "content-type": "text/event-stream" })
          .end(delta("a") + `event: error\ndata: ${JSON.stringify({ message: "bad things" })}\n\n`),
      (res) =>
        res.writeHead(200, { "content-type": "text/event-stream" }).end(delta("a") + "data: {oops\n\n"),
    ];
    const expected = ["MODEL_SERVER", "MODEL_SERVER", "MODEL_SERVER", "MODEL_SERVER", "MODEL_BAD_STREAM"];
    let answer = answers[0]!;
    const srv = await rawServer((_req, res) => answer(res));
    for (const [i, a] of answers.entries()) {
      answer = a;
      const ours = await failure(provider(srv.baseUrl));
      const sdk = await sdkFailure(srv.baseUrl);
      expect(ours.code).toBe(expected[i]);
      expect([ours.code, ours.message]).toEqual([sdk.code, sdk.message]);
    }
  });

  it("sends the configured key and headers, and the SDK's content type and accept", async () => {
    const fake = await fakeOpenAI();
    const p = createOpenAIProvider({
      name: "p",
      baseUrl: `${fake.baseUrl}/`,
      apiKey: "sk-h",
      headers: { "HTTP-Referer": "https://example.org", "X-Title": "familiar" },
      timeoutMs: 10_000,
    });
    await collect(p);
    const h = fake.requests[0]!.headers;
    expect(fake.requests[0]!.path).toBe("/v1/chat/completions");
    expect(h.authorization).toBe("Bearer sk-h");
    expect(h["content-type"]).toBe("application/json");
    expect(h.accept).toBe("application/json");
    expect(h["http-referer"]).toBe("https://example.org");
    expect(h["x-title"]).toBe("familiar");
  });
});
