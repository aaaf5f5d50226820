/**
 * The periodic `tick` event, driven by a FakeClock in a real daemon: every 30 s of clock time each
 * connected client gets `{ts, queueDepth}` with the next `seq`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../internal/core/clock.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const clock = new FakeClock(Date.UTC(2026, 5, 1, 12, 0));
let h: GatewayHarness;
let c: GatewayClient;

beforeAll(async () => {
  h = await startGatewayDaemon({ clock, config: { heartbeat: { every: 0 } } });
  c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "tick-test" });
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});

describe("tick event", () => {
  it("arrives every 30 s of clock time with the clock's timestamp and the queue depth", async () => {
    const ticks: { payload: { ts: number; queueDepth: number }; seq: number }[] = [];
    c.on("tick", (p, seq) => ticks.push({ payload: p as { ts: number; queueDepth: number }, seq }));
    await clock.advance(29_999);
    // Nothing yet: the first tick is due 30 s after start.
    await c.request("status");
    expect(ticks).toHaveLength(0);
    await clock.advance(1);
    await waitFor(() => ticks.length === 1);
    await clock.advance(30_000);
    await waitFor(() => ticks.length === 2);
    expect(ticks.map((t) => t.payload)).toEqual([
      { ts: Date.UTC(2026, 5, 1, 12, 0, 30), queueDepth: 0 },
      { ts: Date.UTC(2026, 5, 1, 12, 1, 0), queueDepth: 0 },
    ]);
    expect(ticks[1]!.seq).toBe(ticks[0]!.seq + 1);
  });
});
