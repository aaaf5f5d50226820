/**
 * Issue 34 item 1: auto-compaction never summarises away the message being answered. An agent with
 * a 20,000-token window and a history near its threshold receives a message of a third, two thirds
 * and more than the whole window; through the real host, loop and router against the fake OpenAI
 * server (real SQLite), the model's request always ends with that message: verbatim when it fits
 * the window, cut in the middle with a note the model sees (and a notice to the user) when it does
 * not. A tool result of the current turn is kept verbatim beside it.
 */
import { describe, expect, it } from "vitest";
import type { RecordedRequest } from "../../../test/fakes/openai-server.js";
import type { TestCore } from "../../../test/helpers/core.js";
import { useFakeModelSuite } from "../../../test/helpers/fake-model-suite.js";
import { resolveContextWindow } from "../../models/context-window.js";
import { createModelRouter } from "../../models/router.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { createAgentHost, type AgentHostImpl } from "../host.js";
import { createHostCompactor } from "./host-compactor.js";
import { compactHistory } from "./compact.js";
import { cutTailToFit, pendingTurnStart } from "./protected-tail.js";
import { defaultTokenEstimator as est } from "./token-estimator.js";

const KEY = "agent:main:gateway:pending";
const WINDOW = 20_000;
const suite = useFakeModelSuite();
let core: TestCore | undefined;

type Msg = { role: string; content?: unknown };
const isSummaryRequest = (msgs: Msg[]): boolean => {
  const sys = typeof msgs[0]?.content === "string" ? msgs[0].content : "";
  return sys.startsWith("You compress") || sys.startsWith("You merge");
};
const text = (m: Msg | undefined): string => (typeof m?.content === "string" ? m.content : "");

function setup(): AgentHostImpl {
  core = suite.createCore({
    models: {
      providers: {
        f: { base_url: suite.fake.baseUrl, api_key: "sk-test", models: { m: { context_window: WINDOW } } },
      },
      primary: "f/m",
      max_retries: 0,
    },
    agents: { defaults: { compact: { memory_flush: false } } },
  });
  const ctx = core.ctx;
  const router = createModelRouter({ config: ctx.config, logger: ctx.logger, clock: ctx.clock });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: ctx.config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/m", agentId),
    // What a daemon agent's tool specs take (the agent had the usual tools).
    toolTokens: () => 2_000,
  });
  return createAgentHost({ ctx, model: router, compactor });
}

/** A message of about `tokens` tokens (by the estimator), starting and ending with markers. */
function messageOf(tokens: number): string {
  const line = "Line of the quarterly report: revenue by region, costs and the forecast for next year. ";
  const perLine = est.text(line);
  const body = line.repeat(Math.ceil(tokens / perLine));
  return `BEGIN-ASK-7731 ${body} END: what is the total for the west region? END-ASK-7731`;
}

/** Fills the session to about 12,000 tokens: the next message of any size crosses the threshold. */
async function seed(host: AgentHostImpl): Promise<void> {
  suite.fake.setHandler((req) =>
    isSummaryRequest(req.body?.messages ?? [])
      ? { text: "- Earlier: the user shared reports." }
      : { text: "ok" },
  );
  for (let i = 0; i < 6; i++)
    await host.submit({ channel: "gateway", sessionKey: KEY, text: `${i}: ${messageOf(2_000)}` }).result;
  suite.fake.reset();
}

async function ask(
  host: AgentHostImpl,
  tokens: number,
): Promise<{ answerReq: RecordedRequest; notices: string[]; sent: string }> {
  const answers: RecordedRequest[] = [];
  suite.fake.setHandler((req) => {
    if (isSummaryRequest(req.body?.messages ?? []))
      return { text: "- Earlier: the user shared six reports." };
    answers.push(req);
    return { text: "The west region total is 42." };
  });
  const notices: string[] = [];
  const sent = messageOf(tokens);
  const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: sent }, (e: AgentEvent) => {
    if (e.type === "notice") notices.push(e.text);
  }).result;
  expect(r.text).toBe("The west region total is 42.");
  expect(answers).toHaveLength(1);
  return { answerReq: answers[0]!, notices, sent };
}

describe("compaction keeps the message being answered (20,000-token window)", () => {
  it("a third of the window: compacted history, the message verbatim and last", async () => {
    const host = setup();
    await seed(host);
    const { answerReq, notices, sent } = await ask(host, Math.floor(WINDOW / 3));
    const msgs = answerReq.body!.messages!;
    expect(msgs.at(-1)!.role).toBe("user");
    expect(text(msgs.at(-1))).toBe(sent);
    expect(msgs.some((m) => text(m).startsWith("[Summary of earlier conversation]"))).toBe(true);
    expect(notices.some((n) => n.startsWith("Compacted the conversation"))).toBe(true);
    expect(notices.join("\n")).not.toMatch(/was cut/);
  });

  it("two thirds of the window: still verbatim (it fits the window beside the reply's reserve)", async () => {
    const host = setup();
    await seed(host);
    const { answerReq, notices, sent } = await ask(host, Math.floor((WINDOW * 2) / 3));
    const msgs = answerReq.body!.messages!;
    expect(text(msgs.at(-1))).toBe(sent);
    expect(est.messages(msgs.map((m) => ({ role: "user" as const, content: text(m) })))).toBeLessThan(WINDOW);
    expect(notices.join("\n")).not.toMatch(/was cut/);
  });

  it("more than the whole window: cut in the middle with a note the model sees, the user told", async () => {
    const host = setup();
    await seed(host);
    const { answerReq, notices, sent } = await ask(host, Math.floor(WINDOW * 1.3));
    const msgs = answerReq.body!.messages!;
    const last = text(msgs.at(-1));
    expect(msgs.at(-1)!.role).toBe("user");
    expect(last.startsWith("BEGIN-ASK-7731")).toBe(true);
    expect(last.endsWith("what is the total for the west region? END-ASK-7731")).toBe(true);
    expect(last).toMatch(/characters of this message were cut here because it does not fit/);
    expect(last.length).toBeLessThan(sent.length);
    const total = msgs.reduce((n, m) => n + est.text(text(m)) + 4, 0);
    expect(total).toBeLessThan(WINDOW);
    const notice = notices.join("\n");
    expect(notice).toMatch(/Your message .* is too long for the model's context window/);
    expect(notice).toMatch(/full text stays in the archived session/);
    // The archived session keeps the message whole.
    const rows = core!.ctx.db
      .prepare<[], { content: string }>("SELECT content FROM messages WHERE role = 'user' ORDER BY id")
      .all();
    expect(rows.some((r) => r.content === sent)).toBe(true);
  });

  it("a first message larger than the window is cut instead of failing the call", async () => {
    const host = setup();
    const { answerReq, notices } = await ask(host, WINDOW * 2);
    expect(text(answerReq.body!.messages!.at(-1))).toMatch(/were cut here/);
    expect(notices.join("\n")).toMatch(/Your message .* too long/);
  });
});

describe("the protected tail", () => {
  it("starts at a pending question and takes the turn's tool calls and results with it", () => {
    const call = { id: "c1", name: "read", arguments: "{}" };
    const h = [
      { role: "user" as const, content: "old" },
      { role: "assistant" as const, content: "old answer" },
      { role: "user" as const, content: "new" },
      { role: "assistant" as const, content: "", tool_calls: [call] },
      { role: "tool" as const, content: "result", tool_call_id: "c1" },
    ];
    expect(pendingTurnStart(h)).toBe(2);
    expect(pendingTurnStart(h.slice(0, 2))).toBe(2);
  });

  it("cuts the biggest texts first, keeps small ones verbatim, and fits", () => {
    const big = "x".repeat(40_000);
    const tail = [
      { role: "user" as const, content: "short question" },
      { role: "assistant" as const, content: "", tool_calls: [{ id: "c", name: "read", arguments: "{}" }] },
      { role: "tool" as const, content: big, tool_call_id: "c" },
    ];
    const r = cutTailToFit(tail, 2_000, est);
    expect(est.messages(r.messages)).toBeLessThanOrEqual(2_000);
    expect(r.messages[0]).toEqual(tail[0]);
    expect((r.messages[2] as { content: string }).content).toMatch(/of this tool result were cut here/);
    expect(r.cut!.cutIndexes).toEqual([2]);
  });
});

describe("compactHistory with a turn in progress", () => {
  it("keeps the question and this turn's tool results verbatim even with keepLastN 0", async () => {
    const older = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0
        ? { role: "user" as const, content: `old question ${i} ${"a".repeat(800)}` }
        : { role: "assistant" as const, content: `old answer ${i} ${"b".repeat(800)}` },
    );
    const call = { id: "c1", name: "read_file", arguments: '{"path":"report.csv"}' };
    const turn = [
      { role: "user" as const, content: `summarise report.csv ${"q".repeat(6_000)}` },
      { role: "assistant" as const, content: "", tool_calls: [call] },
      { role: "tool" as const, content: `csv ${"r".repeat(6_000)}`, tool_call_id: "c1", name: "read_file" },
    ];
    const r = await compactHistory({
      messages: [...older, ...turn],
      keepLastN: 0,
      observationMask: true,
      budgetTokens: 2_000,
      protectedBudgetTokens: 8_000,
      summaryContextWindow: 20_000,
      summarize: () => Promise.resolve("- the user asked old questions"),
      estimator: est,
    });
    expect(r.level).toBe("full");
    expect(r.keptMessages).toEqual(turn);
    expect(r.cut).toBeUndefined();
  });
});
