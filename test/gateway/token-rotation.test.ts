/**
 * Issue 32: rotating a leaked token locks the thief out. A websocket opened with the old token is
 * closed (4001) when a hot reload changes or removes `gateway.token`, and it cannot act meanwhile:
 * the cron job it asks for is not added. A websocket opened with the new token keeps working.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { writeFileSync } from "node:fs";
import { GatewayClient } from "../../internal/gateway/client.js";
import { CLOSE_TOKEN_REVOKED } from "../../internal/gateway/ws-server.js";
import { harnessConfig, startGatewayDaemon, type GatewayHarness } from "./harness.js";

const OLD = "old-token-leaked-0123456789";
const NEW = "new-token-fresh-9876543210";

/** A raw ws connection with the given token; resolves once `connect` was answered. */
async function rawConnect(url: string, token: string) {
  const ws = new WebSocket(url);
  const frames: { id?: number; ok?: boolean; error?: { code: string } }[] = [];
  const closed = new Promise<{ code: number; reason: string }>((r) =>
    ws.on("close", (code, reason) => r({ code, reason: reason.toString() })),
  );
  ws.on("message", (d) => frames.push(JSON.parse(String(d)) as (typeof frames)[number]));
  await new Promise<void>((r, j) => {
    ws.once("open", () => r());
    ws.once("error", j);
  });
  ws.send(
    JSON.stringify({
      type: "req",
      id: 1,
      method: "connect",
      params: { token, client: { name: "thief" }, protocol: 1, role: "owner" },
    }),
  );
  await new Promise<void>((r) => {
    const check = (): void => (frames.some((f) => f.id === 1) ? r() : void setTimeout(check, 10));
    check();
  });
  expect(frames.find((f) => f.id === 1)?.ok).toBe(true);
  return { ws, frames, closed };
}

let h: GatewayHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function reloadWith(gateway: Record<string, unknown>): void {
  writeFileSync(h!.configPath, JSON.stringify(harnessConfig(h!.dir, h!.port, h!.fake.baseUrl, { gateway })));
  expect(h!.daemon.config.reload()).toMatchObject({ ok: true });
}

describe("token rotation", () => {
  it("a reload that changes gateway.token closes every websocket that used the old one", async () => {
    h = await startGatewayDaemon({ gateway: { token: OLD } });
    const thief = await rawConnect(h.wsUrl, OLD);
    const client = await GatewayClient.connect({ url: h.wsUrl, token: OLD, clientName: "old-cli" });
    const clientClosed = new Promise<number>((r) => client.onClose((code) => r(code)));
    expect(await client.request("cron.list")).toBeDefined();

    reloadWith({ token: NEW });
    // The thief acts right after the reload: nothing it asks for runs.
    thief.ws.send(
      JSON.stringify({
        type: "req",
        id: 2,
        method: "cron.add",
        params: { job: { id: "stolen", every: "1m", message: "run id" } },
      }),
    );
    const c = await thief.closed;
    expect(c.code).toBe(CLOSE_TOKEN_REVOKED);
    expect(c.reason).toMatch(/token changed/);
    expect(await clientClosed).toBe(CLOSE_TOKEN_REVOKED);
    expect(thief.frames.find((f) => f.id === 2)?.ok).not.toBe(true);
    expect(h.daemon.parts.cron.list().map((j) => j.id)).not.toContain("stolen");
    expect(h.logs().some((l) => /closed websocket connections that used the old gateway token/.test(l))).toBe(
      true,
    );
    // The old token no longer connects; the new one does and works.
    await expect(GatewayClient.connect({ url: h.wsUrl, token: OLD, clientName: "old" })).rejects.toThrow(
      /invalid gateway token/,
    );
    const fresh = await GatewayClient.connect({ url: h.wsUrl, token: NEW, clientName: "owner" });
    expect(await fresh.request("cron.list")).toBeDefined();
    // A reload that leaves the token alone keeps the new connection.
    reloadWith({ token: NEW, max_body_bytes: 2_000_000 });
    expect(await fresh.request("cron.list")).toBeDefined();
    await fresh.close();
  });

  it("a reload that removes gateway.token closes its websockets too (the generated token applies)", async () => {
    h = await startGatewayDaemon({ gateway: { token: OLD } });
    const thief = await rawConnect(h.wsUrl, OLD);
    reloadWith({});
    expect((await thief.closed).code).toBe(CLOSE_TOKEN_REVOKED);
  });
});
