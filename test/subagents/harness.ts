/**
 * Test harness for subagents and CLI engines: the agent host assembled exactly as the daemon does it
 * (`createAgentHostService`: router, usage tracker, tools service, engines, task manager, delegate and
 * dispatch tools) over a real SQLite file, with a MemoryChannel registered as channel `test` and the
 * fake OpenAI server (optionally behind a counting proxy) as the model provider.
 */
import { type Clock } from "../../internal/core/clock.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import type { SendOptions } from "../../internal/channels/channel.js";
import { createToolsService, type ToolsParts } from "../../internal/daemon/tools-service.js";
import { createModelRouter } from "../../internal/models/router.js";
import { UsageTracker } from "../../internal/agent/usage/usage-tracker.js";
import { createAgentHostService, type AgentHostParts } from "../../internal/agent/host-service.js";
import type { InboundMessage, TurnHandle } from "../../internal/core/host.js";
import type { AgentEvent } from "../../internal/core/agent-events.js";
import type { ToolContext, ToolResult } from "../../internal/tools/tool.js";
import type { RecordedRequest } from "../fakes/openai-server.js";
import { createTestCore, type TestCore } from "../helpers/core.js";

/** A MemoryChannel that counts every send attempt, failed ones included. */
export class CountingChannel extends MemoryChannel {
  attempts = 0;
  override async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    this.attempts++;
    return super.send(target, text, opts);
  }
}

export interface SubagentHarness {
  core: TestCore;
  channel: CountingChannel;
  channels: ChannelRegistry;
  tools: ToolsParts;
  agents: AgentHostParts;
  /** The ledger the host, the memory index and (given to createMediaParts) media record into. */
  usage: UsageTracker;
  /** Submits a message from the owner on channel `test` (reply target `test:owner`). */
  submit(text: string, onEvent?: (e: AgentEvent) => void, over?: Partial<InboundMessage>): TurnHandle;
  /** Runs a tool of agent `main` directly, in the owner's session. */
  callTool(name: string, args: object, over?: Partial<ToolContext>): Promise<ToolResult>;
  /** Stops the services (as a daemon stop does after its drain) and closes the db; keeps the dir. */
  stop(): Promise<void>;
  /** stop() and remove the temp dir. */
  close(): Promise<void>;
}

export const OWNER_KEY = "agent:main:test:dm:owner";
export const OWNER_TARGET = "test:owner";

/** Provider `f` (the fake server or a proxy in front of it), primary `f/main-model`, no retries. */
export function modelsConfig(baseUrl: string): Record<string, unknown> {
  return {
    providers: { f: { base_url: baseUrl, api_key: "sk-test" } },
    primary: "f/main-model",
    max_retries: 0,
    timeout_s: 30,
  };
}

export async function createSubagentHarness(
  config: Record<string, unknown>,
  opts: { clock?: Clock; dir?: string } = {},
): Promise<SubagentHarness> {
  const core = createTestCore(config, {
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.dir ? { dir: opts.dir } : {}),
  });
  const ctx = core.ctx;
  const channels = new ChannelRegistry();
  const channel = new CountingChannel("test");
  await channel.start();
  channels.add(channel);
  const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
  const usage = new UsageTracker({ db: ctx.db, config: () => ctx.config(), clock: ctx.clock });
  // As the daemon: the memory index's embedding calls go in the same ledger.
  const tools = createToolsService(ctx, { channels, usage });
  await tools.service.start();
  const agents = createAgentHostService(ctx, { router, usage, tools, outbox: channels });
  await agents.service.start();
  let seq = 0;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await agents.service.stop();
    await tools.service.stop().catch(() => undefined);
    await channel.stop();
    core.db.close();
  };
  return {
    core,
    channel,
    channels,
    tools,
    agents,
    usage,
    submit: (text, onEvent, over = {}) =>
      agents.host.submit(
        {
          channel: "test",
          sessionKey: OWNER_KEY,
          text,
          replyTarget: OWNER_TARGET,
          sender: { id: "owner" },
          ...over,
        },
        onEvent,
      ),
    callTool: (name, args, over = {}) =>
      tools.registry
        .forAgent("main")
        .execute(
          { id: `direct${++seq}`, name, arguments: JSON.stringify(args) },
          new AbortController().signal,
          {
            sessionKey: OWNER_KEY,
            sessionId: "direct",
            agentId: "main",
            workspace: ctx.config().workspace,
            replyTarget: OWNER_TARGET,
            requestId: `direct-${seq}`,
            depth: 0,
            logger: ctx.logger,
            requestApproval: () => Promise.resolve("denied"),
            ...over,
          },
        ),
    stop,
    async close() {
      await stop();
      core.close();
    },
  };
}

type Msg = { role: string; content?: unknown; tool_call_id?: string };

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((p) => (p && typeof p === "object" && "text" in p ? String(p.text) : "")).join("");
  return "";
}

/** Messages of a recorded request. */
export function messagesOf(req: RecordedRequest | undefined): Msg[] {
  return (req?.body?.messages ?? []) as Msg[];
}

/** The last user message of a recorded request. */
export function lastUser(req: RecordedRequest | undefined): string {
  const users = messagesOf(req).filter((m) => m.role === "user");
  return text(users.at(-1)?.content);
}

/** Tool-result messages of a recorded request. */
export function toolResults(req: RecordedRequest | undefined): string[] {
  return messagesOf(req)
    .filter((m) => m.role === "tool")
    .map((m) => text(m.content));
}

/** System messages of a recorded request (the prompt first, then system events). */
export function systemMessages(req: RecordedRequest | undefined): string[] {
  return messagesOf(req)
    .filter((m) => m.role === "system")
    .map((m) => text(m.content));
}

/** Requests the fake received for one model. */
export function forModel(reqs: readonly RecordedRequest[], model: string): RecordedRequest[] {
  return reqs.filter((r) => r.model === model);
}

/** Polls `fn` until it returns a truthy value (generous timeout for a loaded machine). */
export async function waitFor<T>(
  fn: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  what = "condition",
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not met in time`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
