/**
 * `/compact [options] [instructions]` as a chat user sends it: the shared chat-command handler, the real
 * agent host and compactor, the real model router talking to the fake OpenAI server, real SQLite.
 * Options are per-session settings: validated, saved on the session row, used by this compaction and
 * carried to the successor.
 */
import { describe, expect, it } from "vitest";
import type { TestCore } from "../../../test/helpers/core.js";
import { useFakeModelSuite } from "../../../test/helpers/fake-model-suite.js";
import { AgentChoiceStore } from "../../inbound/agent-choice.js";
import { parseCommand, runCommand, type CommandContext } from "../../inbound/commands.js";
import { resolveContextWindow } from "../../models/context-window.js";
import { createModelRouter } from "../../models/router.js";
import { createAgentHost, type AgentHostImpl } from "../host.js";
import { parseCompactText } from "./compact-options.js";
import { createHostCompactor } from "./host-compactor.js";

const KEY = "agent:main:telegram:direct:42";
const suite = useFakeModelSuite();
let core: TestCore | undefined;

const isSummary = (msgs: { content?: unknown }[]): boolean =>
  typeof msgs[0]?.content === "string" && /^You (compress|merge)/.test(msgs[0].content);

async function setup(turns: number): Promise<{ host: AgentHostImpl; send: (t: string) => Promise<string> }> {
  core = suite.createCore({
    models: {
      providers: { f: { base_url: suite.fake.baseUrl, api_key: "sk-test" } },
      primary: "f/main",
      max_retries: 0,
    },
  });
  const ctx = core.ctx;
  const router = createModelRouter({ config: ctx.config, logger: ctx.logger, clock: ctx.clock });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: ctx.config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/main", agentId),
  });
  const host = createAgentHost({ ctx, model: router, compactor });
  suite.fake.setHandler((req) =>
    isSummary(req.body?.messages ?? [])
      ? { text: "- Invoice INV-2291 is due on 2026-12-01." }
      : { text: `answer ${req.body?.messages?.length ?? 0}` },
  );
  for (let i = 0; i < turns; i++)
    await host.submit({ channel: "telegram", sessionKey: KEY, text: `about invoice INV-2291, part ${i}` })
      .result;
  const c: CommandContext = {
    channel: "telegram",
    sessionKey: KEY,
    agentId: "main",
    chatScope: "telegram:42",
    chatId: "42",
    sender: { id: "42" },
    approver: { target: "telegram:42" },
  };
  const deps = { ctx, host, choices: new AgentChoiceStore(ctx.db) };
  const send = (text: string) => runCommand(parseCommand(text)!, c, deps);
  return { host, send };
}

const summaryRequests = () => suite.fake.requests.filter((r) => isSummary(r.body?.messages ?? []));

describe("parseCompactText", () => {
  it.each([
    ["", {}, undefined],
    ["focus on invoices", {}, "focus on invoices"],
    ["keep=4", { keepLastN: 4 }, undefined],
    ["keep_last_n=0 mask=off x", { keepLastN: 0, observationMask: false }, "x"],
    ["MASK=On strategy=manual", { observationMask: true, strategy: "manual" }, undefined],
    ["model=openai/gpt-4o-mini hi", { summaryModel: "openai/gpt-4o-mini" }, "hi"],
    ["summary_model=default", { summaryModel: null }, undefined],
    // Only leading known options: the rest is instructions, verbatim.
    ["note that x=1 keep=3", {}, "note that x=1 keep=3"],
    ["keep=3 a=b keep=4", { keepLastN: 3 }, "a=b keep=4"],
  ])("%j", (text, options, instructions) => {
    const r = parseCompactText(text);
    expect(r.options).toEqual(options);
    expect(r.instructions).toBe(instructions);
  });

  it.each([
    ["keep=201", 'keep: expected an integer from 0 to 200, got "201"'],
    ["keep=-1", 'keep: expected an integer from 0 to 200, got "-1"'],
    ["keep_last_n=two", 'keep_last_n: expected an integer from 0 to 200, got "two"'],
    ["mask=maybe", 'mask: expected on or off, got "maybe"'],
    ["strategy=sometimes", 'strategy: expected auto, manual or off, got "sometimes"'],
    ["model=gpt4", 'model: expected <provider>/<model> or default, got "gpt4"'],
  ])("%s is refused", (text, message) => {
    expect(() => parseCompactText(text)).toThrow(message);
  });
});

describe("/compact from a chat", () => {
  it("compacts with the user's instructions and tells the user the token counts", async () => {
    const { host, send } = await setup(8);
    const before = host.sessions.head(KEY)!.id;
    const reply = await send("/compact focus on invoices");
    expect(reply).toMatch(/^Compacted the conversation: ~[\d,]+ -> ~[\d,]+ tokens\.$/);
    expect(host.sessions.head(KEY)!.id).not.toBe(before);
    const sys = String(summaryRequests()[0]!.body!.messages![0]!.content);
    expect(sys).toContain("Additional instructions from the user: focus on invoices");
    expect(sys).toContain("Drop greetings"); // observation mask on by default
    // The successor starts with the summary, then the last 10 messages verbatim.
    const msgs = host.sessions.messages(host.sessions.head(KEY)!.id);
    expect(msgs[0]!.content).toContain("INV-2291");
    expect(msgs).toHaveLength(11);
  });

  it("options are saved on the session, used now and carried to the successor", async () => {
    const { host, send } = await setup(8);
    const reply = await send("/compact keep=2 mask=off model=f/summ keep the due dates");
    expect(reply).toMatch(/^Compacted the conversation/);
    const req = summaryRequests()[0]!;
    expect(req.model).toBe("summ");
    const sys = String(req.body!.messages![0]!.content);
    expect(sys).toContain("Keep the substance of every turn"); // observation mask off
    expect(sys).toContain("Additional instructions from the user: keep the due dates");
    expect(sys).not.toContain("keep=2");
    const head = host.sessions.head(KEY)!;
    expect(host.sessions.messages(head.id)).toHaveLength(3); // summary + 2 kept
    expect(head).toMatchObject({
      compact_keep_last_n: 2,
      compact_observation_mask: 0,
      compact_summary_model: "f/summ",
      compact_strategy: null,
    });
  });

  it("a bad option changes nothing and names the option", async () => {
    const { host, send } = await setup(4);
    const before = host.sessions.head(KEY)!;
    const reply = await send("/compact keep=500");
    expect(reply).toBe('/compact failed: keep: expected an integer from 0 to 200, got "500"');
    expect(host.sessions.head(KEY)).toEqual(before);
    expect(summaryRequests()).toHaveLength(0);
  });

  it("strategy=off is saved and stops compaction until turned back on", async () => {
    const { host, send } = await setup(8);
    const id = host.sessions.head(KEY)!.id;
    expect(await send("/compact strategy=off")).toBe(
      "/compact failed: compaction is off for this session (compact.strategy: off) (settings saved: strategy=off)",
    );
    expect(host.sessions.head(KEY)).toMatchObject({ id, compact_strategy: "off" });
    expect(await send("/compact")).toBe(
      "/compact failed: compaction is off for this session (compact.strategy: off)",
    );
    expect(await send("/compact strategy=manual")).toMatch(/^Compacted the conversation/);
    expect(host.sessions.head(KEY)).toMatchObject({ compact_strategy: "manual" });
    expect(host.sessions.head(KEY)!.id).not.toBe(id);
  });
});
