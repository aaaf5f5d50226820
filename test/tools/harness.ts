/**
 * Test harness for the tools: a real core (temp dir, SQLite file), the real tools service with an
 * in-memory channel, and a helper that runs one tool call through the agent's ToolSet.
 */
import { FakeClock, type Clock } from "../../internal/core/clock.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { createToolsService, type ToolsParts } from "../../internal/daemon/tools-service.js";
import type { ToolContext, ToolResult } from "../../internal/tools/tool.js";
import { createTestCore, type TestCore } from "../helpers/core.js";
import { createAgentHost, type AgentHostImpl } from "../../internal/agent/host.js";
import { createModelRouter } from "../../internal/models/router.js";
import { answerOf } from "../../internal/agent/trace-spans.js";

export interface ToolsHarness {
  core: TestCore;
  parts: ToolsParts;
  channel: MemoryChannel;
  channels: ChannelRegistry;
  workspace: string;
  ctx(over?: Partial<ToolContext>): ToolContext;
  call(
    name: string,
    args: unknown,
    opts?: { ctx?: Partial<ToolContext>; signal?: AbortSignal; agent?: string },
  ): Promise<ToolResult>;
  close(): Promise<void>;
}

export async function createToolsHarness(
  config: Record<string, unknown> = {},
  opts: { clock?: Clock; bundledSkillsDir?: string; start?: boolean; mcpBaseBackoffMs?: number } = {},
): Promise<ToolsHarness> {
  const core = createTestCore(config, opts.clock ? { clock: opts.clock } : {});
  const channels = new ChannelRegistry();
  const channel = new MemoryChannel("test");
  await channel.start();
  channels.add(channel);
  const parts = createToolsService(core.ctx, {
    channels,
    ...(opts.bundledSkillsDir ? { bundledSkillsDir: opts.bundledSkillsDir } : {}),
    ...(opts.mcpBaseBackoffMs !== undefined ? { mcpBaseBackoffMs: opts.mcpBaseBackoffMs } : {}),
  });
  if (opts.start) await parts.service.start();
  const workspace = core.ctx.config().workspace;
  let seq = 0;
  const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
    sessionKey: "agent:main:test:owner",
    sessionId: "s1",
    agentId: "main",
    workspace,
    replyTarget: "test:owner",
    requestId: "r1",
    depth: 0,
    logger: core.ctx.logger,
    requestApproval: (req) =>
      parts
        .requestApproval(over.replyTarget ?? "test:owner", "agent:main:test:owner", req)
        .then((a) => answerOf(a).decision),
    ...over,
  });
  return {
    core,
    parts,
    channel,
    channels,
    workspace,
    ctx,
    call: (name, args, o = {}) =>
      parts.registry
        .forAgent(o.agent ?? "main")
        .execute(
          { id: `c${++seq}`, name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
          o.signal ?? new AbortController().signal,
          ctx(o.ctx),
        ),
    async close() {
      await parts.service.stop().catch(() => undefined);
      await channel.stop();
      core.close();
    },
  };
}

/**
 * A tools harness plus a real agent host on the real model router, its provider the fake OpenAI
 * server at `baseUrl` (`f/m`): for tests that drive tools through the loop.
 */
export async function createLoopHost(
  baseUrl: string,
  config: Record<string, unknown> = {},
  opts: { clock?: Clock; timeoutS?: number } = {},
): Promise<{ h: ToolsHarness; host: AgentHostImpl }> {
  const h = await createToolsHarness(
    {
      models: {
        providers: { f: { base_url: baseUrl, api_key: "sk-test" } },
        primary: "f/m",
        max_retries: 0,
        timeout_s: opts.timeoutS ?? 10,
      },
      ...config,
    },
    { start: true, ...(opts.clock ? { clock: opts.clock } : {}) },
  );
  const ctx = h.core.ctx;
  const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
  const host = createAgentHost({
    ctx,
    model: router,
    toolsFor: (agent) => h.parts.registry.forAgent(agent.id, agent.tools),
    requestApproval: h.parts.requestApproval,
  });
  return { h, host };
}

/** Polls until `fn` returns a truthy value (generous default for loaded CI machines). */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 15_000,
  what = "condition",
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export { FakeClock };
