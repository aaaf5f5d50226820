import { describe, expect, it } from "vitest";
import { EventBus } from "../core/event-bus.js";
import { ZERO_USAGE } from "../models/types.js";
import { GatewayMetrics } from "./metrics.js";

describe("GatewayMetrics", () => {
  it("counts turns, tokens, errors and latency from bus events and renders gauges per channel", () => {
    const bus = new EventBus();
    let now = 1_000_000;
    const m = new GatewayMetrics(bus, () => now);
    const emit = (channel: string, event: Parameters<typeof bus.emit<"chat">>[1]["event"]) =>
      bus.emit("chat", { sessionKey: "k", agentId: "main", channel, event });
    const start = (runId: string) =>
      emit("telegram", {
        type: "turn_start",
        runId,
        sessionKey: "k",
        sessionId: "s",
        agentId: "main",
        requestId: runId,
      });
    start("r1");
    emit("telegram", {
      type: "usage",
      runId: "r1",
      usage: { ...ZERO_USAGE, input: 100, output: 20, total: 120 },
      provider: "p",
      model: "m",
    });
    now += 700;
    emit("telegram", { type: "turn_end", runId: "r1", text: "hi", finishReason: "stop", usage: ZERO_USAGE });
    start("r2");
    emit("telegram", { type: "error", runId: "r2", code: "MODEL_UNAVAILABLE", message: "down" });
    now += 3000;
    emit("telegram", { type: "turn_end", runId: "r2", text: "", finishReason: "error", usage: ZERO_USAGE });

    const text = m.render({
      queueDepth: () => 3,
      channels: () => ({
        telegram: { state: "connected", since: 0 },
        discord: { state: "reconnecting", since: 0 },
      }),
      wsClients: () => 2,
      uptimeSeconds: () => 42,
    });
    const lines = text.split("\n");
    expect(lines).toEqual(
      expect.arrayContaining([
        'familiar_turns_total{channel="telegram",finish_reason="stop"} 1',
        'familiar_turns_total{channel="telegram",finish_reason="error"} 1',
        'familiar_tokens_total{kind="input"} 100',
        'familiar_tokens_total{kind="output"} 20',
        'familiar_errors_total{code="MODEL_UNAVAILABLE"} 1',
        'familiar_turn_duration_seconds_bucket{le="0.5"} 0',
        'familiar_turn_duration_seconds_bucket{le="1"} 1',
        'familiar_turn_duration_seconds_bucket{le="5"} 2',
        'familiar_turn_duration_seconds_bucket{le="+Inf"} 2',
        "familiar_turn_duration_seconds_sum 3.7",
        "familiar_turn_duration_seconds_count 2",
        "familiar_queue_depth 3",
        'familiar_channel_up{channel="telegram",state="connected"} 1',
        'familiar_channel_up{channel="discord",state="reconnecting"} 0',
        "familiar_gateway_clients 2",
        "familiar_uptime_seconds 42",
      ]),
    );
    // Process memory gauges: present, positive, and the heap in use within the resident size.
    const gauge = (name: string): number =>
      Number(lines.find((l) => l.startsWith(`${name} `))?.split(" ")[1] ?? Number.NaN);
    const rss = gauge("process_resident_memory_bytes");
    const heap = gauge("nodejs_heap_size_used_bytes");
    expect(rss).toBeGreaterThan(0);
    expect(heap).toBeGreaterThan(0);
    expect(heap).toBeLessThan(rss);
    expect(gauge("nodejs_heap_size_total_bytes")).toBeGreaterThanOrEqual(heap);
    expect(gauge("nodejs_external_memory_bytes")).toBeGreaterThanOrEqual(0);
    // Handles by type and the process's listeners: a timer held open here must be counted.
    const held = setInterval(() => undefined, 60_000);
    const again = m
      .render({ queueDepth: () => 0, channels: () => ({}), wsClients: () => 0, uptimeSeconds: () => 0 })
      .split("\n");
    clearInterval(held);
    const timers = again.find((l) => l.startsWith('nodejs_active_resources{type="Timeout"} '));
    expect(Number(timers?.split(" ")[1])).toBeGreaterThanOrEqual(1);
    expect(again.some((l) => /^nodejs_process_listeners \d+$/.test(l))).toBe(true);
    m.close();
    start("r3");
    emit("telegram", { type: "turn_end", runId: "r3", text: "", finishReason: "stop", usage: ZERO_USAGE });
    expect(
      m.render({ queueDepth: () => 0, channels: () => ({}), wsClients: () => 0, uptimeSeconds: () => 0 }),
    ).toContain('familiar_turns_total{channel="telegram",finish_reason="stop"} 1');
  });
});
