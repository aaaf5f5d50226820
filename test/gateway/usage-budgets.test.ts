/**
 * `usage.budgets` over the websocket of a real daemon: the owner (with the gateway token) gets spend
 * against each configured limit; a stranger (no token, a wrong token, no connect) gets nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { GatewayClient } from "../../internal/gateway/client.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "budget-gateway-token-123";

function rawSession(
  url: string,
  frames: string[],
): Promise<{ code: number; reason: string; received: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const received: string[] = [];
    ws.on("open", () => {
      for (const f of frames) ws.send(f);
    });
    ws.on("message", (d) => received.push(String(d)));
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString(), received }));
    ws.on("error", reject);
  });
}

const frame = (id: number, method: string, params: Record<string, unknown> = {}): string =>
  JSON.stringify({ type: "req", id, method, params });
const connect = (token?: string): string =>
  frame(1, "connect", { ...(token !== undefined ? { token } : {}), client: { name: "t" }, protocol: 1 });

describe("usage.budgets", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayDaemon({
      gateway: { token: TOKEN, rate_limit: { max_failures: 50, window_s: 60 } },
      config: { budgets: { overall: { daily_usd: 2 }, agents: { main: { monthly_tokens: 100_000 } } } },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers the owner with spend against each limit", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "budget-test" });
    await c
      .request("chat.send", { sessionKey: "budget", message: "hello", wait: true })
      .catch(() => undefined);
    const b = await c.request<{
      timezone: string;
      warnAt: number;
      limits: { id: string; spent: number; limit: number; unit: string }[];
    }>("usage.budgets");
    await c.close();
    expect(b.warnAt).toBe(0.8);
    expect(b.limits.map((l) => [l.id, l.limit, l.unit])).toEqual([
      ["overall:daily_usd", 2, "usd"],
      ["agent:main:monthly_tokens", 100_000, "tokens"],
    ]);
    // The fake model has no price: its call counts at the default price, not as free.
    expect(b.limits[0]!.spent).toBeGreaterThan(0);
    expect(b.limits[1]!.spent).toBeGreaterThan(0);
  });

  it("refuses a stranger: no token, a wrong token, or no connect frame", async () => {
    for (const frames of [
      [connect(), frame(2, "usage.budgets")],
      [connect("wrong"), frame(2, "usage.budgets")],
      [frame(1, "usage.budgets")],
    ]) {
      const r = await rawSession(h.wsUrl, frames);
      expect(r.code).toBe(1008);
      expect(r.received.join("\n")).not.toContain("limits");
    }
  });

  it("refuses a stranger the reconcile method too (it reads the ledger)", async () => {
    const params = { text: "date,model,cost\n2026-11-27,m,1\n" };
    for (const frames of [
      [connect(), frame(2, "usage.reconcile", params)],
      [connect("wrong"), frame(2, "usage.reconcile", params)],
      [frame(1, "usage.reconcile", params)],
    ]) {
      const r = await rawSession(h.wsUrl, frames);
      expect(r.code).toBe(1008);
      expect(r.received.join("\n")).not.toContain('"ok":true');
    }
  });
});
