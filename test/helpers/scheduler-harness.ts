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
import { afterAll, afterEach, beforeAll } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";

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

/** What {@link schedulerSuite} hands a test file. */
export interface SchedulerSuite {
  /** The file's fake model (started before its first test). */
  readonly fake: FakeOpenAI;
  /** Stops `svc` and closes `h` after the running test. */
  keep(h: SchedulerHarness, svc: { stop(): Promise<void> }): void;
}

/**
 * One fake model per file, and every harness and scheduler a test started stopped after it (the
 * model's queue reset): the lifecycle the cron suites share instead of copying it.
 */
export function schedulerSuite(): SchedulerSuite {
  let fake: FakeOpenAI | undefined;
  const open: { h: SchedulerHarness; svc: { stop(): Promise<void> } }[] = [];
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake?.close();
  });
  afterEach(async () => {
    for (const { h, svc } of open.splice(0)) {
      await svc.stop();
      h.core.close();
    }
    fake?.reset();
  });
  return {
    get fake() {
      if (!fake) throw new Error("schedulerSuite: the fake model is not started yet");
      return fake;
    },
    keep: (h, svc) => void open.push({ h, svc }),
  };
}
