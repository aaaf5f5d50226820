/**
 * Fault injection, gateway: the real daemon (a child process) gets seeded random and malformed HTTP
 * requests and bodies on every route, raw garbage on the TCP port, random and malformed websocket
 * frames, oversize bodies and frames, and slow (slowloris-style) clients. Invariants: no request is
 * answered 500 (bad input is the caller's error, 4xx), the process never dies, it keeps serving
 * `/healthz` and turns while slow clients hang on, and its memory stays bounded.
 */
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { GatewayClient } from "../../internal/gateway/client.js";
import { PROTOCOL_VERSION } from "../../internal/gateway/protocol.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";

const TOKEN = "gateway-fuzz-token-0123456789";
const MAX_BODY = 64 * 1024;
const FULL = process.env.FAMILIAR_FAULTS_FULL === "1";
const HTTP_CASES = FULL ? 2000 : 400;
const WS_FRAMES = FULL ? 3000 : 600;
const SLOW_CLIENTS = FULL ? 400 : 100;

let fake: FakeOpenAI;
let d: DaemonProcess;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  d = await startDaemonProcess({
    config: {
      log: { level: "warn", pretty: false },
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/m",
        max_retries: 0,
        timeout_s: 10,
      },
      gateway: {
        token: TOKEN,
        max_body_bytes: MAX_BODY,
        // The fuzzer sends many bad tokens from loopback; the limiter is not what is under test here.
        rate_limit: { max_failures: 1_000_000, window_s: 1 },
      },
    },
  });
});
afterAll(async () => {
  await cleanupDaemons();
  await fake?.close();
});

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** A random JSON-ish value, biased towards the shapes the routes look at. */
function randomJson(r: () => number, depth = 0): unknown {
  const x = r();
  if (depth > 4 || x < 0.3)
    return pick(r, [
      null,
      true,
      false,
      0,
      -1,
      1.5,
      1e308,
      "",
      "user",
      "familiar",
      "familiar/nope",
      "x".repeat(500),
    ]);
  if (x < 0.55) return Array.from({ length: Math.floor(r() * 4) }, () => randomJson(r, depth + 1));
  const keys = [
    "model",
    "messages",
    "role",
    "content",
    "stream",
    "user",
    "type",
    "text",
    "image_url",
    "url",
    "id",
    "method",
    "params",
    "sessionKey",
    "message",
    "__proto__",
    "constructor",
  ];
  const o: Record<string, unknown> = {};
  for (let i = 0; i < 1 + Math.floor(r() * 4); i++) o[pick(r, keys)] = randomJson(r, depth + 1);
  return o;
}

function randomBody(r: () => number): Buffer | string {
  const x = r();
  if (x < 0.15)
    return Buffer.from(Array.from({ length: Math.floor(r() * 300) }, () => Math.floor(r() * 256)));
  if (x < 0.25) return "[".repeat(5000 + Math.floor(r() * 50_000));
  if (x < 0.35) return JSON.stringify(randomJson(r)).slice(0, Math.floor(r() * 40));
  if (x < 0.5) {
    const content = pick(r, [
      "hi",
      "",
      null,
      5,
      [{ type: "text", text: "hi" }],
      [{ type: "image_url", image_url: { url: "http://x" } }],
      [{ type: "weird" }],
      { a: 1 },
    ]);
    return JSON.stringify({
      model: pick(r, ["familiar", "familiar/main", "gpt-4", "", 7]),
      messages: pick(r, [
        [{ role: "user", content }],
        [{ role: pick(r, ["system", "tool", "bogus", 3]), content }],
        [],
        "nope",
        [null],
      ]),
      ...(r() < 0.5 ? { stream: r() < 0.5 } : {}),
      ...(r() < 0.3 ? { user: pick(r, ["fuzz", "", "a:b c", 5]) } : {}),
    });
  }
  return JSON.stringify(randomJson(r));
}

const PATHS = [
  "/v1/chat/completions",
  "/v1/models",
  "/v1/models/familiar%2Fmain",
  "/v1/models/%E0%A4%A",
  "/v1/nothing",
  "/api/sessions",
  "/api/agents",
  "/api/sessions/agent%3Amain%3Agateway%3Afuzz/messages",
  "/api/turns",
  "/hooks/unknown",
  "/ws",
  "/",
  "/chat",
  "/..%2f..%2fetc%2fpasswd",
  "/%",
  "//",
  "/healthz?x=%zz",
];

interface Answer {
  status: number;
  error?: string;
}

function rawHttp(opts: {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port: d.port, method: opts.method, path: opts.path, headers: opts.headers },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0 }));
        res.on("error", (e) => resolve({ status: res.statusCode ?? 0, error: e.message }));
      },
    );
    req.setTimeout(20_000, () => req.destroy(new Error("timeout")));
    req.on("error", (e) => resolve({ status: 0, error: e.message }));
    if (opts.body !== undefined) req.end(opts.body);
    else req.end();
  });
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0);
}

async function healthy(): Promise<void> {
  const res = await fetch(`${d.url}/healthz`);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

async function turnWorks(text: string): Promise<void> {
  const res = await fetch(`${d.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: text }] }),
  });
  expect(res.status).toBe(200);
  expect(
    ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
  ).toBe(`echo: ${text}`);
}

describe("gateway under malformed input and slow clients", () => {
  it("a request target of // or a malformed escape is a 4xx, not a crashed daemon (regression)", async () => {
    // `new URL("//", base)` threw inside the request listener and killed the process.
    for (const path of ["//", "//api/sessions", "///x", "//ws"]) {
      const a = await rawHttp({ method: "GET", path, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(a.status, path).toBeGreaterThanOrEqual(400);
      expect(a.status, path).toBeLessThan(500);
    }
    // The same target on a websocket upgrade.
    const up = await rawHttp({
      method: "GET",
      path: "//",
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    expect(up.status).toBe(404);
    // decodeURIComponent threw a URIError: a 500 before, now a clear 400.
    for (const path of ["/v1/models/%E0%A4%A", "/api/agents/%E0%A4%A/sessions", "/hooks/%E0%A4%A"]) {
      const a = await rawHttp({
        method: path.startsWith("/hooks") ? "POST" : "GET",
        path,
        headers: { authorization: `Bearer ${TOKEN}` },
        ...(path.startsWith("/hooks") ? { body: "{}" } : {}),
      });
      expect(a.status, path).toBe(400);
    }
    expect(d.child.exitCode).toBeNull();
    await healthy();
  });

  it("answers random and malformed HTTP requests with 4xx, never 500, and keeps serving", async () => {
    for (let i = 0; i < 30; i++) await turnWorks(`warm ${i}`);
    const rssBefore = rssKb(d.child.pid!);
    const r = rng(424242);
    const bad: string[] = [];
    const batch = 20;
    for (let i = 0; i < HTTP_CASES; i += batch) {
      const runs = Array.from({ length: batch }, async () => {
        const method = pick(r, ["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
        const path = pick(r, PATHS);
        const body = method === "GET" ? undefined : randomBody(r);
        const headers: Record<string, string> = {};
        const auth = r();
        if (auth < 0.6) headers.authorization = `Bearer ${TOKEN}`;
        else if (auth < 0.8)
          headers.authorization = pick(r, ["Bearer", "Bearer wrong", "Basic abc", "bearer  " + TOKEN]);
        headers["content-type"] = pick(r, [
          "application/json",
          "text/plain",
          "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=x",
        ]);
        const a = await rawHttp({ method, path, headers, ...(body !== undefined ? { body } : {}) });
        if (a.status === 0 || a.status >= 500)
          bad.push(`${method} ${path} -> ${a.status} ${a.error ?? ""} body=${String(body).slice(0, 120)}`);
      });
      await Promise.all(runs);
    }
    expect(bad.slice(0, 10)).toEqual([]);
    await healthy();
    await turnWorks("after http fuzz");

    // Raw garbage on the port: the HTTP parser refuses it, nothing else happens.
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const s = connect(d.port, "127.0.0.1", () => {
          s.end(Buffer.from(Array.from({ length: 200 }, () => Math.floor(r() * 256))));
        });
        s.on("error", () => resolve());
        s.on("close", () => resolve());
        s.resume();
      });
    }
    await healthy();

    // Oversize bodies: declared and chunked (no length) both get 413, and the daemon stays up.
    const big = Buffer.alloc(MAX_BODY * 4, 0x61);
    const declared = await rawHttp({
      method: "POST",
      path: "/v1/chat/completions",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        "content-length": String(big.length),
      },
      body: big,
    });
    expect([413, 0]).toContain(declared.status);
    const chunked = await rawHttp({
      method: "POST",
      path: "/v1/chat/completions",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      },
      body: big,
    });
    expect([413, 0]).toContain(chunked.status);
    expect([declared.status, chunked.status]).toContain(413);
    await turnWorks("after oversize");

    const rssAfter = rssKb(d.child.pid!);
    // Generous: garbage collection timing varies; a leak of the bodies would be far larger than this.
    expect(rssAfter - rssBefore, `RSS ${rssBefore} kB -> ${rssAfter} kB`).toBeLessThan(120 * 1024);
  }, 120_000);

  it("survives random and malformed websocket frames and oversize frames", async () => {
    const r = rng(777);
    // Garbage before `connect` closes the socket with a reason.
    for (const first of [
      "not json",
      "{}",
      JSON.stringify({ type: "req", id: 1, method: "status" }),
      Buffer.from([0, 1, 2]),
    ]) {
      const ws = new WebSocket(`ws://127.0.0.1:${d.port}/ws`);
      const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
        ws.on("open", () => ws.send(first));
        ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() }));
        ws.on("error", () => undefined);
      });
      expect(closed.code).toBe(1008);
      expect(closed.reason).toMatch(/connect/);
    }

    const c = await GatewayClient.connect({
      url: `ws://127.0.0.1:${d.port}/ws`,
      token: TOKEN,
      clientName: "fuzz",
    });
    // The raw socket of a second authenticated connection, to send anything at all.
    const ws = new WebSocket(`ws://127.0.0.1:${d.port}/ws`);
    const replies: unknown[] = [];
    let closeInfo: { code: number; reason: string } | undefined;
    await new Promise<void>((resolve, reject) => {
      ws.on("open", () =>
        ws.send(
          JSON.stringify({
            type: "req",
            id: 0,
            method: "connect",
            params: { token: TOKEN, client: { name: "raw" }, protocol: PROTOCOL_VERSION },
          }),
        ),
      );
      ws.once("message", () => resolve());
      ws.on("error", reject);
    });
    ws.on("message", (m) => replies.push(String(m)));
    ws.on("close", (code, reason) => (closeInfo = { code, reason: reason.toString() }));
    const methods = [
      "chat.send",
      "chat.abort",
      "chat.history",
      "sessions.list",
      "sessions.reset",
      "sessions.compact",
      "sessions.delete",
      "agents.list",
      "status",
      "usage.get",
      "cron.list",
      "cron.run",
      "logs.tail",
      "connect",
      "nope",
      "",
    ];
    let sent = 0;
    for (let i = 0; i < WS_FRAMES; i++) {
      const x = r();
      let frame: string | Buffer;
      if (x < 0.1) frame = Buffer.from(Array.from({ length: 30 }, () => Math.floor(r() * 256)));
      else if (x < 0.2) frame = JSON.stringify(randomJson(r)).slice(0, Math.floor(r() * 30));
      else if (x < 0.3) frame = JSON.stringify(randomJson(r));
      else
        frame = JSON.stringify({
          type: pick(r, ["req", "req", "req", "res", "event", 5]),
          id: pick(r, [i, `s${i}`, null, {}, -1]),
          method: pick(r, methods),
          params:
            r() < 0.5
              ? randomJson(r)
              : {
                  sessionKey: pick(r, ["fuzz", "a:b", "", 5, "x".repeat(300)]),
                  message: pick(r, ["hi", "/status", "/new", "", 7]),
                  limit: pick(r, [1, -5, 1e9, "x"]),
                },
        });
      ws.send(frame);
      sent++;
      if (i % 100 === 99) await new Promise((res) => setTimeout(res, 20));
    }
    // The daemon keeps answering the well-behaved client meanwhile.
    const st = await c.request<Record<string, unknown>>("status", {});
    expect(st).toBeTypeOf("object");
    await new Promise((res) => setTimeout(res, 500));
    expect(closeInfo, "the fuzzing socket stays open: bad frames get error responses").toBeUndefined();
    expect(replies.length).toBeGreaterThan(sent / 2);

    // An oversize frame closes that socket (1009) with a reason; other clients are unaffected.
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    ws.send("x".repeat(MAX_BODY * 2));
    const oc = await closed;
    expect(oc.code).toBe(1009);
    expect(oc.reason).toMatch(/max_body_bytes/);
    const again = await c.request<{ sessions: unknown[] }>("sessions.list", {});
    expect(Array.isArray(again.sessions)).toBe(true);
    await c.close();
    await healthy();
  }, 120_000);

  it("disconnects a websocket client that stops reading instead of buffering without bound", async () => {
    // A session whose history is big (~180 kB per chat.history answer).
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${d.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${TOKEN}`,
          "x-familiar-session": "big-history",
        },
        body: JSON.stringify({
          model: "familiar",
          messages: [{ role: "user", content: "z".repeat(30_000) }],
        }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const rssBefore = rssKb(d.child.pid!);
    const ws = new WebSocket(`ws://127.0.0.1:${d.port}/ws`);
    await new Promise<void>((resolve, reject) => {
      ws.on("open", () =>
        ws.send(
          JSON.stringify({
            type: "req",
            id: 0,
            method: "connect",
            params: { token: TOKEN, client: { name: "slow-reader" }, protocol: PROTOCOL_VERSION },
          }),
        ),
      );
      ws.once("message", () => resolve());
      ws.on("error", reject);
    });
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    ws.on("error", () => undefined);
    // Stop reading: every reply piles up on the daemon's side of the socket.
    const socket = (ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    const frame = (id: number): string =>
      JSON.stringify({ type: "req", id, method: "chat.history", params: { sessionKey: "big-history" } });
    for (let i = 1; i <= (FULL ? 600 : 200); i++) {
      if (ws.readyState !== WebSocket.OPEN) break;
      ws.send(frame(i));
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    // The daemon gives up on this client (1013 slow consumer, or a terminated socket).
    await new Promise((r) => setTimeout(r, 1500));
    socket.resume();
    const code = await closed;
    expect([1013, 1006]).toContain(code);
    await healthy();
    await turnWorks("after a slow reader");
    const rssAfter = rssKb(d.child.pid!);
    expect(rssAfter - rssBefore, `RSS ${rssBefore} kB -> ${rssAfter} kB`).toBeLessThan(120 * 1024);
  }, 60_000);

  it("keeps serving while slow clients trickle headers and bodies", async () => {
    const sockets: Socket[] = [];
    let ticking = true;
    for (let i = 0; i < SLOW_CLIENTS; i++) {
      const s = connect(d.port, "127.0.0.1");
      s.on("error", () => undefined);
      s.resume();
      sockets.push(s);
      if (i % 2 === 0) s.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
      else
        s.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":"familiar",`,
        );
    }
    const trickle = (async () => {
      while (ticking) {
        for (const s of sockets) if (!s.destroyed) s.write("a");
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    try {
      for (let i = 0; i < 10; i++) {
        await healthy();
        await turnWorks(`while slow ${i}`);
      }
    } finally {
      ticking = false;
      await trickle;
      for (const s of sockets) s.destroy();
    }
    await healthy();
    expect(d.child.exitCode).toBeNull();
  }, 120_000);
});
