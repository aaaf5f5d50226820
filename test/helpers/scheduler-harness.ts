/**
 * Test harness for heartbeat and cron: a real CoreContext (temp SQLite, FakeClock), the real agent host
 * over the model router pointed at the fake OpenAI server, and the in-memory channel for delivery.
 */
import { createTestCore, type TestCore } from "./core.js";
import { FakeClock } from "../../internal/core/clock.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";
import { kvLastTargetStore } from "../../internal/channels/last-target-store.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createAgentHost, type AgentHostImpl } from "../../internal/agent/host.js";
import { ToolRegistry } from "../../internal/tools/registry.js";
import type { FakeOpenAI } from "../fakes/openai-server.js";

export interface SchedulerHarness {
  core: TestCore;
  clock: FakeClock;
  host: AgentHostImpl;
  channels: ChannelRegistry;
  channel: MemoryChannel;
  /** The real tool registry the host's agents get their tools from (empty until a test registers). */
  tools: ToolRegistry;
}

/** Model config pointing at the fake server: provider `fake`, primary `fake/m1`, no retries. */
export function fakeModels(fake: FakeOpenAI): Record<string, unknown> {
  return {
    providers: { fake: { base_url: fake.baseUrl, api_key: "sk-test-key" } },
    primary: "fake/m1",
    max_retries: 0,
    timeout_s: 10,
  };
}

export async function startHarness(
  fake: FakeOpenAI,
  config: Record<string, unknown>,
  opts: { clock?: FakeClock; dir?: string } = {},
): Promise<SchedulerHarness> {
  const clock = opts.clock ?? new FakeClock(Date.UTC(2026, 0, 1));
  const core = createTestCore(
    { models: fakeModels(fake), ...config },
    { clock, ...(opts.dir ? { dir: opts.dir } : {}) },
  );
  const router = createModelRouter({ config: () => core.ctx.config(), logger: core.ctx.logger, clock });
  const tools = new ToolRegistry({ config: () => core.ctx.config(), logger: core.ctx.logger });
  const host = createAgentHost({
    ctx: core.ctx,
    model: router,
    toolsFor: (agent) => tools.forAgent(agent.id),
  });
  // Like the daemon: the owner's last target is kept in the kv table (survives a restart).
  const channels = new ChannelRegistry(kvLastTargetStore(core.ctx.db, () => clock.now()));
  const channel = new MemoryChannel("test");
  await channel.start();
  channels.add(channel);
  return { core, clock, host, channels, channel, tools };
}

/** Polls (real time) until `cond` holds; for work that crosses real sockets. */
export async function until(cond: () => boolean, what = "condition", timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
