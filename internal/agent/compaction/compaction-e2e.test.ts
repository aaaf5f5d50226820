/**
 * Issue 4 "Done when" scenarios for compaction, end to end over the real model router talking to the
 * fake OpenAI server on 127.0.0.1, a real SQLite file and the real session store. The test drives the
 * turn itself (user message -> model -> tool call -> tool result -> model) so every model call goes
 * through the compactor's gate exactly as the host does it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  startFakeOpenAI,
  contextOverflowStep,
  type FakeOpenAI,
  type FakeStep,
  type RecordedRequest,
} from "../../../test/fakes/openai-server.js";
import { configFromObject } from "../../config/load.js";
import type { Config } from "../../config/schema.js";
import { FakeClock } from "../../core/clock.js";
import { silentLogger } from "../../log/logger.js";
import { resolveContextWindow } from "../../models/context-window.js";
import { createModelRouter, type ModelRouter } from "../../models/router.js";
import { ModelError, type ChatMessage, type ToolCall } from "../../models/types.js";
import { SessionStore } from "../../session/session-store.js";
import { openDatabase, type Db } from "../../store/db.js";
import { allMigrations } from "../../daemon/migrations.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { findAgent, type AgentDef } from "../agents.js";
import { toChatMessages } from "../history.js";
import { createHostCompactor } from "./host-compactor.js";
import { lineage } from "./lineage.js";
import { SUMMARY_MARKER } from "./prompts.js";
import { compactionBudget } from "./should-compact.js";
import { resolveCompactionSettings } from "./compaction-settings.js";
import { idPattern, plantedIds } from "./testdata/history.js";
import { defaultTokenEstimator as est } from "./token-estimator.js";

const MODEL = "fake/small-32k";
const SYSTEM = "You are Familiar, a personal assistant. Be brief.";
const KEY = "agent:main:gateway:e2e";
const filler =
  "The quarterly numbers look stable, but the west region still lags behind the forecast by a few points. ";

let fake: FakeOpenAI;
let dir: string;
let db: Db;
let store: SessionStore;
let summaryRequests: RecordedRequest[];
/** How the fake summariser answers request number n (1-based); undefined = a good summary. */
let summaryFailure: ((n: number) => FakeStep | undefined) | undefined;

function cfg(compact: Record<string, unknown> = {}): Config {
  return configFromObject(
    {
      log: { level: "silent" },
      models: {
        providers: {
          fake: {
            base_url: fake.baseUrl,
            api_key: "sk-test",
            models: { "small-32k": { context_window: 32_768 } },
          },
        },
        primary: MODEL,
        max_retries: 0,
      },
      agents: { defaults: { compact } },
    },
    dir,
  );
}

function textOf(req: RecordedRequest): string {
  return (req.body?.messages ?? []).map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
}

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "familiar-compaction-e2e-"));
  db = openDatabase(dir, { migrations: allMigrations });
  store = new SessionStore(db);
  summaryRequests = [];
  summaryFailure = undefined;
  let call = 0;
  fake.reset();
  fake.setHandler((req) => {
    const msgs = req.body?.messages ?? [];
    const sys = typeof msgs[0]?.content === "string" ? msgs[0].content : "";
    if (sys.startsWith("You compress") || sys.startsWith("You merge")) {
      summaryRequests.push(req);
      const fail = summaryFailure?.(summaryRequests.length);
      if (fail) return fail;
      // A faithful summariser: it keeps every identifier it was shown.
      const ids = [...new Set(textOf(req).match(idPattern) ?? [])];
      return {
        text: `- The user reviewed weekly reports with the assistant.\n- Identifiers: ${ids.join(", ") || "none"}`,
      };
    }
    call++;
    const last = msgs.at(-1);
    if (last?.role === "user")
      return {
        toolCalls: [
          { id: `call_${call}`, name: "read_file", arguments: { path: `reports/week-${call}.md` } },
        ],
      };
    return { text: `Done (${call}). ${filler}` };
  });
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Harness {
  config: Config;
  router: ModelRouter;
  agent: AgentDef;
  compactor: ReturnType<typeof createHostCompactor>;
  notices: string[];
  flushes: string[];
  sent: number[];
}

function harness(compact: Record<string, unknown> = {}): Harness {
  const config = cfg(compact);
  const router = createModelRouter({ config: () => config, logger: silentLogger(), clock: new FakeClock() });
  const flushes: string[] = [];
  const compactor = createHostCompactor({
    db,
    config: () => config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(config, ref ?? MODEL, agentId),
    memoryFlush: (a) => {
      flushes.push(a.prompt);
      return Promise.resolve();
    },
  });
  const agent = findAgent(config, config.agents.default)!;
  return { config, router, agent, compactor, notices: [], flushes, sent: [] };
}

async function chat(h: Harness, messages: ChatMessage[]): Promise<{ text: string; calls: ToolCall[] }> {
  let text = "";
  const calls: ToolCall[] = [];
  for await (const ev of h.router.stream({ messages, model: MODEL })) {
    if (ev.type === "text") text += ev.delta;
    if (ev.type === "tool_call") calls.push(ev.call);
  }
  return { text, calls };
}

/** What the host does before each model call. */
async function prepare(h: Harness): Promise<ChatMessage[]> {
  const session = store.head(KEY)!;
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    ...toChatMessages(store.messages(session.id)),
  ];
  const out = await h.compactor.beforeModelCall({
    session,
    agent: h.agent,
    modelRef: MODEL,
    messages,
    system: SYSTEM,
    runId: "run",
    emit: (e: AgentEvent) => {
      if (e.type === "notice") h.notices.push(e.text);
    },
  });
  const prompt = out ?? messages;
  h.sent.push(est.messages(prompt));
  return prompt;
}

/** One user turn: user -> tool call -> tool result -> answer. */
async function turn(h: Harness, r: number, plant?: string): Promise<void> {
  store.append(store.head(KEY)!.id, {
    role: "user",
    content: `Round ${r}: check the report for week ${r % 52}.${plant ? ` Please note ${plant} for later.` : ""} ${filler}`,
  });
  const a1 = await chat(h, await prepare(h));
  const sid = store.head(KEY)!.id;
  store.append(sid, { role: "assistant", content: a1.text, toolCalls: a1.calls });
  for (const c of a1.calls)
    store.append(sid, {
      role: "tool",
      toolCallId: c.id,
      toolName: c.name,
      content: `# Week ${r}\n${plant ? `Reference: ${plant}\n` : ""}${"Revenue 1,204,331; churn 2.1%; NPS 41. ".repeat(40)}`,
    });
  const a2 = await chat(h, await prepare(h));
  store.append(store.head(KEY)!.id, { role: "assistant", content: a2.text });
}

function chainOf(sessionId: string): string[] {
  const l = lineage(db, sessionId)!;
  return [...l.backward.map((e) => e.id).reverse(), l.session.id, ...l.forward.map((e) => e.id)];
}

describe("compaction end to end (fake OpenAI server)", () => {
  it("a 2,000-message session on a 32K model stays under budget on every call and keeps what matters", async () => {
    const h = harness();
    const first = store.create(KEY, h.agent.id);
    const plantAt = new Map([3, 40, 90, 160, 230, 300, 370, 440].map((r, i) => [r, plantedIds[i]!]));
    for (let r = 0; r < 500; r++) await turn(h, r, plantAt.get(r));

    const budget = compactionBudget(resolveCompactionSettings(h.config, h.agent.id), 32_768);
    expect(h.sent).toHaveLength(1000);
    for (const t of h.sent) expect(t).toBeLessThanOrEqual(budget);
    // Every summariser request fits the summary model's window too.
    for (const req of summaryRequests) expect(est.text(textOf(req))).toBeLessThan(32_768 - 4096);

    const chain = chainOf(first.id);
    expect(chain.length).toBeGreaterThan(5);
    expect(h.notices.length).toBe(chain.length - 1);
    expect(h.notices[0]).toMatch(
      /^Compacted the conversation: summarised \d+ earlier messages; ~[\d,]+ -> ~[\d,]+ tokens\.$/,
    );
    expect(h.flushes.length).toBe(chain.length - 1);

    // Nothing is lost: 2,000 original messages are readable across the archived sessions.
    const originals = chain.flatMap((id) => store.messages(id)).filter((m) => m.status !== "summary");
    const distinct = new Set(
      originals.map((m) => `${m.role}|${m.content}|${m.tool_calls}|${m.tool_call_id}`),
    );
    expect(distinct.size).toBe(2000);
    const totalUser = new Set(originals.filter((m) => m.role === "user").map((m) => m.content));
    expect(totalUser.size).toBe(500);

    const l = lineage(db, first.id)!;
    expect(l.summaries).toHaveLength(chain.length - 1);
    for (let i = 0; i + 1 < chain.length; i++) {
      const src = store.get(chain[i]!)!;
      const succ = store.get(chain[i + 1]!)!;
      expect(src.archived_at).not.toBeNull();
      expect(src.successor_id).toBe(succ.id);
      expect(succ.parent_id).toBe(src.id);
      const succMsgs = store.messages(succ.id);
      expect(succMsgs[0]).toMatchObject({ role: "system", status: "summary" });
      expect(succMsgs[0]!.content.startsWith(SUMMARY_MARKER)).toBe(true);
      // Kept tail: copied verbatim, at least keep_last_n (10), never starting on a tool result.
      const srcMsgs = store.messages(src.id);
      const kept = l.summaries[i]!;
      const keptCount = srcMsgs.length - kept.messagesSummarised;
      expect(keptCount).toBeGreaterThanOrEqual(10);
      const strip = (m: (typeof srcMsgs)[number]) => [m.role, m.content, m.tool_calls, m.tool_call_id];
      expect(succMsgs.slice(1, 1 + keptCount).map(strip)).toEqual(srcMsgs.slice(-keptCount).map(strip));
      expect(succMsgs[1]!.role).not.toBe("tool");
    }
    // Tool call/result pairs are never split in any session of the chain.
    for (const id of chain) {
      const msgs = store.messages(id);
      const open = new Set<string>();
      for (const m of msgs) {
        if (m.role === "assistant" && m.tool_calls)
          for (const c of JSON.parse(m.tool_calls) as ToolCall[]) open.add(c.id);
        if (m.role === "tool") expect(open.has(m.tool_call_id!)).toBe(true);
      }
    }
    // Every planted identifier reached the summariser and survives in the live session's summary.
    const seen = summaryRequests.map(textOf).join("\n");
    const head = store.head(KEY)!;
    const live = store.messages(head.id)[0]!.content;
    for (const id of plantedIds) {
      expect(seen).toContain(id);
      expect(live).toContain(id);
    }
  }, 180_000); // ~1,000 model calls over loopback: generous for a loaded 2-core CI machine

  it.each([
    { level: "full", failure: () => undefined },
    {
      level: "partial",
      // A refused request (400) for the first chunk and the first of its halves; the second half works.
      failure: (n: number) =>
        n <= 2 ? { error: { status: 400, message: "unsupported content in request" } } : undefined,
    },
    { level: "note", failure: () => ({ error: { status: 401, message: "invalid api key" } }) },
    { level: "note", failure: () => ({ text: "" }) },
    { level: "note", failure: () => ({ malformed: true }) as FakeStep },
  ])("fallback level $level is reached by the summariser failing that way", async ({ level, failure }) => {
    const h = harness({ memory_flush: false });
    const s = store.create(KEY, h.agent.id);
    for (let r = 0; r < 20; r++) await turn(h, r);
    expect(h.notices).toEqual([]); // 20 rounds fit the 32K window; nothing compacted yet
    summaryFailure = failure;
    const out = await h.compactor.compactNow({ session: store.head(KEY)!, agent: h.agent, modelRef: MODEL });
    expect(out.successorId).not.toBe(s.id);
    const rec = lineage(db, s.id)!.summaries[0]!;
    expect(rec.level).toBe(level);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
    // The turn goes on: the next model call works against the successor.
    await turn(h, 999);
    expect(store.head(KEY)!.id).toBe(out.successorId);
  });

  it("hard clear: a summariser failing with context overflow and a budget nothing fits in", async () => {
    const h = harness({ memory_flush: false });
    const s = store.create(KEY, h.agent.id);
    for (let r = 0; r < 20; r++) await turn(h, r);
    summaryFailure = () => contextOverflowStep();
    const out = await h.compactor.compactSession({
      session: s,
      agent: h.agent,
      modelRef: MODEL,
      budget: 120,
    });
    expect(out.level).toBe("hard_clear");
    expect(out.tokensAfter).toBeLessThanOrEqual(120);
    const msgs = store.messages(out.successorId);
    expect(msgs[0]!.content).toMatch(/was cleared/);
    expect(store.messages(s.id).length).toBe(80); // the archived session is intact
  });

  it("a context-overflow error compacts and the retry succeeds", async () => {
    const h = harness({ memory_flush: false });
    store.create(KEY, h.agent.id);
    for (let r = 0; r < 20; r++) await turn(h, r);
    expect(h.notices).toEqual([]);
    store.append(store.head(KEY)!.id, { role: "user", content: "and now?" });
    const session = store.head(KEY)!;
    let messages: ChatMessage[] = [
      { role: "system", content: SYSTEM },
      ...toChatMessages(store.messages(session.id)),
    ];
    fake.enqueue(contextOverflowStep());
    let err: unknown;
    try {
      await chat(h, messages);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe("MODEL_CONTEXT_OVERFLOW");
    const retry = await h.compactor.onOverflow({
      session,
      agent: h.agent,
      modelRef: MODEL,
      messages,
      system: SYSTEM,
      runId: "r",
      emit: (e) => {
        if (e.type === "notice") h.notices.push(e.text);
      },
      attempt: 1,
    });
    expect(retry).toBeDefined();
    expect(est.messages(retry!)).toBeLessThan(est.messages(messages));
    messages = retry!;
    const ok = await chat(h, messages);
    expect(ok.calls.length + ok.text.length).toBeGreaterThan(0);
    expect(h.notices).toHaveLength(1);
    expect(store.head(KEY)!.id).not.toBe(session.id);
  });

  it("strategy off never compacts, manual only on demand", async () => {
    const h = harness({ strategy: "off" });
    const s = store.create(KEY, h.agent.id);
    // A session far over the 32K window: the gate and the overflow path still do nothing.
    for (let r = 0; r < 60; r++) await turn(h, r);
    store.append(s.id, { role: "user", content: "x ".repeat(60_000) });
    await prepare(h);
    const overflow = await h.compactor.onOverflow({
      session: store.head(KEY)!,
      agent: h.agent,
      modelRef: MODEL,
      messages: [],
      system: SYSTEM,
      runId: "r",
      emit: () => {},
      attempt: 1,
    });
    expect(overflow).toBeUndefined();
    await expect(
      h.compactor.compactNow({ session: store.head(KEY)!, agent: h.agent, modelRef: MODEL }),
    ).rejects.toMatchObject({
      code: "COMPACTION_OFF",
    });
    expect(summaryRequests).toHaveLength(0);
    expect(store.head(KEY)!.id).toBe(s.id);
    expect(h.notices).toEqual([]);

    // Per-session override: manual on the session row wins over the config's off.
    const m = store.create("agent:main:gateway:manual", h.agent.id, { compactStrategy: "manual" });
    for (let i = 0; i < 30; i++) store.append(m.id, { role: "user", content: `note ${i} ${filler}` });
    const out = await h.compactor.compactNow({
      session: m,
      agent: h.agent,
      modelRef: MODEL,
      instructions: "keep notes",
    });
    expect(out.successorId).not.toBe(m.id);
    expect(textOf(summaryRequests[0]!)).toContain("Additional instructions from the user: keep notes");
  });
});
