/**
 * Gateway auth and input limits against a real daemon: tokens over HTTP and websocket, the generated
 * default token (0600, reused, never logged) and its fallback on reload, oversize bodies and frames, malformed frames.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GatewayClient } from "../../internal/gateway/client.js";
import { harnessConfig, startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "test-gateway-token-123";

/** Opens a raw socket and resolves with its close code and reason plus the frames it received. */
function rawSession(
  url: string,
  frames: (string | Buffer)[],
): Promise<{ code: number; reason: string; received: unknown[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const received: unknown[] = [];
    ws.on("open", () => {
      for (const f of frames) ws.send(f);
    });
    ws.on("message", (d) => received.push(JSON.parse(String(d))));
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString(), received }));
    ws.on("error", reject);
  });
}

const connectFrame = (token?: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    type: "req",
    id: 1,
    method: "connect",
    params: { token, client: { name: "t" }, protocol: 1, ...extra },
  });

describe("gateway with a token", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayDaemon({
      gateway: { token: TOKEN, max_body_bytes: 4096, rate_limit: { max_failures: 3, window_s: 60 } },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("healthz needs no token and shows no secrets", async () => {
    const r = await fetch(`${h.base}/healthz`);
    const text = await r.text();
    expect(r.status).toBe(200);
    expect(text).not.toContain(TOKEN);
    expect(JSON.parse(text)).toMatchObject({
      status: "ok",
      services: {
        store: { state: "ok" },
        models: { state: "ok", chain: ["fake/test-model"], cooldowns: [] },
        gateway: { state: "ok" },
        heartbeat: { state: expect.any(String) },
        cron: { state: "ok" },
      },
      channels: {},
    });
    expect(text).not.toContain("sk-fake");
  });

  it("HTTP: missing token 401, wrong token 401, right token 200", async () => {
    const missing = await fetch(`${h.base}/metrics`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const ok = await fetch(`${h.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    const text = await ok.text();
    expect(text).toContain("# TYPE familiar_turns_total counter");
    expect(text).toMatch(/familiar_queue_depth \d+/);
    expect(text).toMatch(/familiar_turn_duration_seconds_bucket\{le="\+Inf"\}/);
  });

  it("websocket: the token in the connect frame is checked", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "auth-test" });
    expect(c.hello.protocol).toBe(1);
    expect((await c.request<{ agents: { id: string }[] }>("agents.list")).agents.map((a) => a.id)).toContain(
      "main",
    );
    await c.close();
    const bad = await rawSession(h.wsUrl, [connectFrame("nope")]);
    expect(bad.code).toBe(1008);
    expect(bad.reason).toMatch(/invalid gateway token/);
    expect(bad.received[0]).toMatchObject({
      type: "res",
      id: 1,
      ok: false,
      error: { code: "invalid_token" },
    });
  });

  it("oversize body gets 413 with a clear JSON error and the server keeps serving", async () => {
    const r = await fetch(`${h.base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "x".repeat(10_000) }] }),
    });
    expect(r.status).toBe(413);
    const body = (await r.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/max_body_bytes \(4096 bytes\)/);
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it("oversize websocket frame closes with 1009", async () => {
    const r = await rawSession(h.wsUrl, [
      connectFrame(TOKEN),
      JSON.stringify({ type: "req", id: 2, method: "status", params: { pad: "y".repeat(8000) } }),
    ]);
    expect(r.code).toBe(1009);
    expect(r.reason).toMatch(/frame exceeds gateway.max_body_bytes \(4096 bytes\)/);
  });

  it("a first frame that is not connect closes the socket with a reason", async () => {
    const r = await rawSession(h.wsUrl, [JSON.stringify({ type: "req", id: 1, method: "status" })]);
    expect(r.code).toBe(1008);
    expect(r.reason).toMatch(/first frame must be a connect request/);
    const v = await rawSession(h.wsUrl, [connectFrame(TOKEN, { protocol: 99 })]);
    expect(v.code).toBe(1002);
    expect(v.reason).toMatch(/protocol version 99/);
  });

  it("malformed frames, unknown methods and bad params get error responses on a live socket", async () => {
    const ws = new WebSocket(h.wsUrl);
    const got: { id: unknown; ok: boolean; error?: { code: string; message: string } }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on("error", reject);
      ws.on("message", (d) => {
        got.push(JSON.parse(String(d)) as (typeof got)[number]);
        if (got.length === 6) resolve();
      });
      ws.on("open", () => {
        ws.send(connectFrame(TOKEN));
        ws.send("{not json");
        ws.send(JSON.stringify([1, 2]));
        ws.send(JSON.stringify({ type: "req", id: 3, method: "no.such" }));
        ws.send(JSON.stringify({ type: "req", id: 4, method: "chat.send", params: { sessionKey: "x" } }));
        ws.send(Buffer.from([1, 2, 3]), { binary: true });
      });
    });
    expect(got[0]).toMatchObject({ ok: true });
    const byId = (id: unknown) => got.find((g) => g.id === id);
    const nulls = got.filter((g) => g.id === null).map((g) => g.error?.code);
    // invalid JSON, a non-object frame and a binary frame have no usable id
    expect(nulls.sort()).toEqual(["invalid_frame", "invalid_frame", "invalid_json"]);
    expect(byId(3)).toMatchObject({ ok: false, error: { code: "unknown_method" } });
    expect(byId(4)).toMatchObject({ ok: false, error: { code: "invalid_params" } });
    expect(byId(4)?.error?.message).toMatch(/params\.message/);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });
});

// The failure limiter (slowing guessers, never refusing a correct token) is tested in
// auth-limiter.test.ts.

describe("the default token and bind checks", () => {
  let h: GatewayHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("without gateway.token the daemon generates one: requests without it are refused", async () => {
    h = await startGatewayDaemon();
    const file = join(h.dir, "data", "gateway-token");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(h.token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    expect((await fetch(`${h.base}/metrics`)).status).toBe(401);
    expect((await fetch(`${h.base}/v1/models`)).status).toBe(401);
    await expect(GatewayClient.connect({ url: h.wsUrl, clientName: "stranger" })).rejects.toThrow(
      /missing gateway token/,
    );
    expect((await fetch(`${h.base}/v1/models`, { headers: h.headers() })).status).toBe(200);
    const c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "owner" });
    expect(c.hello.defaultAgent).toBe("main");
    await c.close();
    // The start-up log says where the token is, never the token itself.
    const logs = h.logs();
    expect(logs.some((l) => l.includes(file) && /gateway listening/.test(l))).toBe(true);
    expect(logs.some((l) => l.includes(h!.token))).toBe(false);
    // Reused across restarts.
    const before = h.token;
    await h.restart();
    expect(readFileSync(file, "utf8").trim()).toBe(before);
    expect((await fetch(`${h.base}/v1/models`, { headers: h.headers() })).status).toBe(200);
  });

  it("an explicit gateway.token wins over the generated one", async () => {
    h = await startGatewayDaemon({ gateway: { token: TOKEN } });
    const generated = readFileSync(join(h.dir, "data", "gateway-token"), "utf8").trim();
    const with_ = (t: string) => fetch(`${h!.base}/v1/models`, { headers: { authorization: `Bearer ${t}` } });
    expect((await with_(TOKEN)).status).toBe(200);
    expect((await with_(generated)).status).toBe(401);
  });

  it("starts on a non-loopback bind with the generated token, and requests need it", async () => {
    h = await startGatewayDaemon({ gateway: { bind: "0.0.0.0" } });
    expect((await fetch(`${h.base}/v1/models`)).status).toBe(401);
    expect((await fetch(`${h.base}/v1/models`, { headers: h.headers() })).status).toBe(200);
  });

  it("a hot reload that drops gateway.token falls back to the generated token and warns", async () => {
    h = await startGatewayDaemon({ gateway: { bind: "0.0.0.0", token: TOKEN } });
    writeFileSync(
      h.configPath,
      JSON.stringify(harnessConfig(h.dir, h.port, h.fake.baseUrl, { gateway: { bind: "0.0.0.0" } })),
    );
    expect(h.daemon.config.reload()).toMatchObject({ ok: true, changed: ["gateway"] });
    expect((await fetch(`${h.base}/v1/models`)).status).toBe(401);
    expect((await fetch(`${h.base}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${h.base}/v1/models`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(401);
    const generated = readFileSync(join(h.dir, "data", "gateway-token"), "utf8").trim();
    expect(
      (await fetch(`${h.base}/v1/models`, { headers: { authorization: `Bearer ${generated}` } })).status,
    ).toBe(200);
    await expect(GatewayClient.connect({ url: h.wsUrl, clientName: "sneaky" })).rejects.toThrow(
      /missing gateway token/,
    );
    const warn = h.logs().find((l) => /gateway access widened/.test(l));
    expect(warn).toMatch(/gateway.token removed/);
    expect(warn).not.toContain(TOKEN);
  });
});
