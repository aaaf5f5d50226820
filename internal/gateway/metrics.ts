/**
 * Prometheus metrics for `GET /metrics`, counted from the EventBus `chat` events (so every channel's
 * turns count, not only the gateway's) plus gauges read at scrape time.
 *
 * Invariant: label sets are small and bounded (channel ids, finish reasons, error codes), so memory
 * stays flat however many turns run.
 */
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import type { EventBus } from "../core/event-bus.js";
import type { ChannelStatus } from "../channels/channel.js";

const BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const MAX_LABEL_VALUES = 200;

export interface MetricsGauges {
  queueDepth(): number;
  channels(): Record<string, ChannelStatus>;
  wsClients(): number;
  uptimeSeconds(): number;
}

export class GatewayMetrics {
  private turns = new Map<string, number>();
  private tokens = { input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: 0 };
  private errors = new Map<string, number>();
  private buckets = new Array<number>(BUCKETS.length).fill(0);
  private latencySum = 0;
  private latencyCount = 0;
  private starts = new Map<string, number>();
  private unsubscribe: () => void;

  constructor(
    bus: EventBus,
    private now: () => number,
  ) {
    this.unsubscribe = bus.on("chat", ({ channel, event: e }) => {
      switch (e.type) {
        case "turn_start":
          this.starts.set(e.runId, this.now());
          break;
        case "usage":
          this.tokens.input += e.usage.input;
          this.tokens.output += e.usage.output;
          this.tokens.cache_read += e.usage.cacheRead;
          this.tokens.cache_write += e.usage.cacheWrite;
          this.tokens.reasoning += e.usage.reasoning;
          break;
        case "error":
          bump(this.errors, e.code);
          break;
        case "turn_end": {
          bump(this.turns, `${channel}\u0000${e.finishReason}`);
          const t0 = this.starts.get(e.runId);
          this.starts.delete(e.runId);
          if (t0 !== undefined) this.observe((this.now() - t0) / 1000);
          break;
        }
        default:
          break;
      }
    });
  }

  close(): void {
    this.unsubscribe();
  }

  private observe(seconds: number): void {
    this.latencySum += seconds;
    this.latencyCount++;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) this.buckets[i]!++;
  }

  /** Renders the Prometheus text exposition format (version 0.0.4). */
  render(g: MetricsGauges): string {
    const out: string[] = [];
    out.push("# HELP familiar_turns_total Agent turns finished, by channel and finish reason.");
    out.push("# TYPE familiar_turns_total counter");
    for (const [k, v] of this.turns) {
      const [channel, reason] = k.split("\u0000");
      out.push(`familiar_turns_total{channel="${esc(channel)}",finish_reason="${esc(reason)}"} ${v}`);
    }
    out.push("# HELP familiar_tokens_total Model tokens used, by kind.");
    out.push("# TYPE familiar_tokens_total counter");
    for (const [k, v] of Object.entries(this.tokens)) out.push(`familiar_tokens_total{kind="${k}"} ${v}`);
    out.push("# HELP familiar_errors_total Turn errors, by code.");
    out.push("# TYPE familiar_errors_total counter");
    for (const [k, v] of this.errors) out.push(`familiar_errors_total{code="${esc(k)}"} ${v}`);
    out.push("# HELP familiar_turn_duration_seconds Wall time of a turn from start to end.");
    out.push("# TYPE familiar_turn_duration_seconds histogram");
    BUCKETS.forEach((b, i) =>
      out.push(`familiar_turn_duration_seconds_bucket{le="${b}"} ${this.buckets[i]}`),
    );
    out.push(`familiar_turn_duration_seconds_bucket{le="+Inf"} ${this.latencyCount}`);
    out.push(`familiar_turn_duration_seconds_sum ${this.latencySum}`);
    out.push(`familiar_turn_duration_seconds_count ${this.latencyCount}`);
    out.push("# HELP familiar_queue_depth Queued plus running turns across all sessions.");
    out.push("# TYPE familiar_queue_depth gauge");
    out.push(`familiar_queue_depth ${g.queueDepth()}`);
    out.push("# HELP familiar_channel_up 1 when the channel is connected.");
    out.push("# TYPE familiar_channel_up gauge");
    for (const [id, st] of Object.entries(g.channels()))
      out.push(
        `familiar_channel_up{channel="${esc(id)}",state="${esc(st.state)}"} ${st.state === "connected" ? 1 : 0}`,
      );
    out.push("# HELP familiar_gateway_clients Connected websocket clients.");
    out.push("# TYPE familiar_gateway_clients gauge");
    out.push(`familiar_gateway_clients ${g.wsClients()}`);
    out.push("# HELP familiar_uptime_seconds Seconds since the daemon started.");
    out.push("# TYPE familiar_uptime_seconds gauge");
    out.push(`familiar_uptime_seconds ${g.uptimeSeconds()}`);
    // The process's memory, under the names Prometheus client libraries use, so a leak shows up in
    // the owner's monitoring (RSS alone cannot tell the JS heap from native memory such as SQLite's).
    const mem = process.memoryUsage();
    const gauge = (name: string, help: string, value: number): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${value}`);
    };
    gauge("process_resident_memory_bytes", "Resident memory size in bytes.", mem.rss);
    gauge("nodejs_heap_size_used_bytes", "V8 heap in use, in bytes.", mem.heapUsed);
    gauge("nodejs_heap_size_total_bytes", "V8 heap reserved, in bytes.", mem.heapTotal);
    // The cap the daemon runs under (--max-old-space-size, cmd/runtime-tuning.ts): shows that the
    // runtime settings reached the process however it was started.
    gauge("nodejs_heap_size_limit_bytes", "V8 heap limit, in bytes.", getHeapStatistics().heap_size_limit);
    // Per V8 space, under prom-client's names: where the heap's memory is (bench/idle-breakdown.ts).
    out.push("# HELP nodejs_heap_space_size_used_bytes V8 heap space in use, in bytes.");
    out.push("# TYPE nodejs_heap_space_size_used_bytes gauge");
    const spaces = getHeapSpaceStatistics();
    for (const sp of spaces)
      out.push(`nodejs_heap_space_size_used_bytes{space="${esc(sp.space_name)}"} ${sp.space_used_size}`);
    out.push("# HELP nodejs_heap_space_size_total_bytes V8 heap space reserved, in bytes.");
    out.push("# TYPE nodejs_heap_space_size_total_bytes gauge");
    for (const sp of spaces)
      out.push(`nodejs_heap_space_size_total_bytes{space="${esc(sp.space_name)}"} ${sp.space_size}`);
    gauge(
      "nodejs_external_memory_bytes",
      "Memory of C++ objects bound to JS objects, in bytes.",
      mem.external,
    );
    // Timers, sockets and other libuv resources by type, and the process's own listeners: a leak of
    // either climbs across reconnects while RSS still looks flat (the soak benchmark watches these).
    const byType = new Map<string, number>();
    for (const t of process.getActiveResourcesInfo()) byType.set(t, (byType.get(t) ?? 0) + 1);
    out.push("# HELP nodejs_active_resources Active libuv resources (timers, sockets...) by type.");
    out.push("# TYPE nodejs_active_resources gauge");
    for (const [t, n] of [...byType].sort()) out.push(`nodejs_active_resources{type="${esc(t)}"} ${n}`);
    gauge(
      "nodejs_process_listeners",
      "Listeners registered on the process object.",
      process.eventNames().reduce((n, e) => n + process.listenerCount(e), 0),
    );
    return out.join("\n") + "\n";
  }
}

function bump(m: Map<string, number>, k: string): void {
  const v = m.get(k);
  if (v !== undefined) m.set(k, v + 1);
  else if (m.size < MAX_LABEL_VALUES) m.set(k, 1);
  else m.set("other", (m.get("other") ?? 0) + 1);
}

function esc(s: string | undefined): string {
  return (s ?? "").replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
