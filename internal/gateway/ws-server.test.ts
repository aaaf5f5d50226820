/**
 * WsGateway on a real HTTP server on 127.0.0.1: slow-consumer disconnect with a small buffer limit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { GatewayAuth } from "./auth.js";
import { CLOSE_TOKEN_REVOKED, WsGateway } from "./ws-server.js";
import { checkRequest } from "./request-guard.js";
import { GatewayClient } from "./client.js";
import { configFromObject } from "../config/load.js";
import { systemClock } from "../core/clock.js";
import { silentLogger } from "../log/logger.js";

const TOKEN = "test-token-0123456789abcdef";
let server: Server | undefined;
let gw: WsGateway | undefined;
afterEach(async () => {
  gw?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function start(maxBufferedBytes: number): Promise<string> {
  const cfg = configFromObject({ log: { level: "silent" } });
  gw = new WsGateway({
    auth: new GatewayAuth(() => cfg, systemClock, TOKEN),
    guard: (req) => checkRequest(req, cfg.gateway),
    logger: silentLogger(),
    maxPayload: () => 1024 * 1024,
    methods: new Map([["ping", () => ({ pong: true })]]),
    hello: () => ({}),
    maxBufferedBytes,
  });
  const g = gw;
  server = createServer();
  server.on("upgrade", (req, socket, head) => g.handleUpgrade(req, socket, head));
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
}

describe("WsGateway slow consumers", () => {
  it("disconnects a client that does not read once its buffer passes the limit; a reading client stays", async () => {
    const url = await start(256 * 1024);
    const slow = await GatewayClient.connect({ url, clientName: "slow", token: TOKEN });
    const fast = await GatewayClient.connect({ url, clientName: "fast", token: TOKEN });
    let received = 0;
    fast.on("big", () => received++);
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      slow.onClose((code, reason) => r({ code, reason })),
    );
    (slow as unknown as { ws: { _socket: { pause(): void } } }).ws._socket.pause();
    const chunk = "x".repeat(64 * 1024);
    // Enough to fill the kernel buffers of the paused peer and then the userland buffer.
    for (let i = 0; i < 2000 && gw!.size === 2; i++) {
      gw!.broadcast("big", chunk);
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(gw!.size).toBe(1);
    (slow as unknown as { ws: { _socket: { resume(): void } } }).ws._socket.resume();
    const c = await closed;
    expect(c.code).toBe(1013);
    expect(c.reason).toMatch(/slow consumer/);
    expect(fast.open).toBe(true);
    expect(await fast.request("ping")).toEqual({ pong: true });
    expect(received).toBeGreaterThan(0);
    await fast.close();
  }, 60_000);
});

describe("WsGateway authority", () => {
  it("checks a connection's token when it acts: once the live token changed, the request is not run", async () => {
    const cfg = configFromObject({ log: { level: "silent" }, gateway: { token: TOKEN } });
    let ran = 0;
    gw = new WsGateway({
      auth: new GatewayAuth(() => cfg, systemClock, "generated-unused"),
      guard: (req) => checkRequest(req, cfg.gateway),
      logger: silentLogger(),
      maxPayload: () => 1024 * 1024,
      methods: new Map([["act", () => ({ ran: ++ran })]]),
      hello: () => ({}),
    });
    const g = gw;
    server = createServer();
    server.on("upgrade", (req, socket, head) => g.handleUpgrade(req, socket, head));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
    const c = await GatewayClient.connect({ url, clientName: "c", token: TOKEN });
    expect(await c.request("act")).toEqual({ ran: 1 });
    const closed = new Promise<number>((r) => c.onClose((code) => r(code)));
    // The token changes without anyone calling revoke(): the next act is refused all the same.
    (cfg.gateway as { token?: string }).token = "rotated-token-000";
    await expect(c.request("act")).rejects.toThrow();
    expect(await closed).toBe(CLOSE_TOKEN_REVOKED);
    expect(ran).toBe(1);
  });
});
