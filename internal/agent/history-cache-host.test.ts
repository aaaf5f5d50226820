/**
 * The kept history through the real agent host (issue 26): whatever happens to a session between
 * turns (another model, another agent, `/compact`, `/new`, a message queued behind a running turn),
 * the history sent to the model is exactly a full rebuild from the stored rows. Real host, compactor,
 * model router and SQLite; the fake OpenAI server records what was sent.
 */
import { describe, expect, it } from "vitest";
import type { TestCore } from "../../test/helpers/core.js";
import { useFakeModelSuite } from "../../test/helpers/fake-model-suite.js";
import { resolveContextWindow } from "../models/context-window.js";
import { toOpenAIMessages } from "../models/openai-provider.js";
import { createModelRouter } from "../models/router.js";
import type { TurnResult } from "../core/host.js";
import { SessionStore } from "../session/session-store.js";
import { createHostCompactor } from "./compaction/host-compactor.js";
import { createAgentHost, type AgentHostImpl } from "./host.js";
import { orderByTurn, toChatMessages } from "./history.js";
import { CONTEXT_NOTE_PREFIX } from "./prompt.js";

const KEY = "agent:main:gateway:kept";
const suite = useFakeModelSuite();
let core: TestCore | undefined;

const isSummary = (msgs: { content?: unknown }[]): boolean =>
  typeof msgs[0]?.content === "string" && /^You (compress|merge)/.test(msgs[0].content);

function setup(): AgentHostImpl {
  core = suite.createCore({
    models: {
      providers: { f: { base_url: suite.fake.baseUrl, api_key: "sk-test" } },
      primary: "f/main",
      max_retries: 0,
    },
    agents: { helper: { description: "a second agent on the same session" } },
  });
  const ctx = core.ctx;
  const router = createModelRouter({ config: ctx.config, logger: ctx.logger, clock: ctx.clock });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: ctx.config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/main", agentId),
  });
  suite.fake.setHandler((req) =>
    isSummary(req.body?.messages ?? [])
      ? { text: "- The owner talked about turns." }
      : { text: `answer ${req.body?.messages?.length ?? 0}` },
  );
  return createAgentHost({ ctx, model: router, compactor });
}

/** The history the model got for the turn `r` against a full rebuild from a fresh store. */
function expectRebuilt(
  r: TurnResult,
  requestBody: { messages?: { role: string; content?: unknown }[] },
): void {
  const sent = (requestBody.messages ?? [])
    .slice(1)
    .filter((m) => !(m.role === "system" && String(m.content).startsWith(CONTEXT_NOTE_PREFIX)));
  // What the turn itself stored after its model call (its answer) was not there yet.
  const rows = new SessionStore(core!.db)
    .messages(r.sessionId)
    .filter((m) => m.request_id !== r.requestId || m.id === r.userMessageId);
  const rebuilt = toOpenAIMessages(toChatMessages(orderByTurn(rows, r.userMessageId)));
  expect(sent).toEqual(JSON.parse(JSON.stringify(rebuilt)));
}

/** The last chat (not summary) request the fake received, or the last one answering `text`. */
function lastChat(text?: string): { messages?: { role: string; content?: unknown }[] } {
  const r = [...suite.fake.requests].reverse().find((q) => {
    const ms = q.body?.messages ?? [];
    return !isSummary(ms) && (text === undefined || ms.at(-1)?.content === text);
  });
  if (!r?.body) throw new Error("no chat request recorded");
  return r.body;
}

describe("kept history through the agent host", () => {
  it("sends a full rebuild's history across models, agents, /compact, /new and queued messages", async () => {
    const host = setup();
    const turn = async (text: string, extra: Record<string, unknown> = {}): Promise<TurnResult> => {
      const r = await host.submit({ channel: "gateway", sessionKey: KEY, text, ...extra }).result;
      expect(r.finishReason).toBe("stop");
      expectRebuilt(r, lastChat());
      return r;
    };
    // Enough turns each time for the history to be kept (short sessions are converted afresh).
    for (let i = 0; i < 10; i++) await turn(`hello ${i}`);
    await turn("with another model", { model: "f/other" });
    await turn("with another agent", { agentId: "helper" });
    await turn("back to the main agent");
    const before = (await turn("before compaction")).sessionId;

    await host.compact(KEY);
    const compacted = await turn("after compaction");
    expect(compacted.sessionId).not.toBe(before);
    for (let i = 0; i < 9; i++) await turn(`after compaction ${i}`);

    host.reset(KEY);
    const fresh = await turn("after /new");
    expect(fresh.sessionId).not.toBe(compacted.sessionId);
    expect(lastChat().messages?.filter((m) => m.role === "user")).toHaveLength(1);
    for (let i = 0; i < 9; i++) await turn(`after /new ${i}`);

    // Two messages sent while a turn runs: both stored before its reply.
    suite.fake.enqueue({ text: "slow reply", delayMs: 30 });
    const a = host.submit({ channel: "gateway", sessionKey: KEY, text: "slow one" });
    await a.started;
    const b = host.submit({ channel: "gateway", sessionKey: KEY, text: "queued one" });
    const c = host.submit({ channel: "gateway", sessionKey: KEY, text: "queued two" });
    await a.result;
    expectRebuilt(await b.result, lastChat("queued one"));
    expectRebuilt(await c.result, lastChat("queued two"));
    await turn("after the queue");
  });
});
