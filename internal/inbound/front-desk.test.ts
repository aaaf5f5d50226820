/**
 * The front desk with a real agent host over a temp SQLite file and the fake OpenAI server: routing
 * (named agent > `/agent` choice > `routing` > default), session keys of every door, what a turn
 * carries to the host (sender, origin, reply target, durability hook), commands with the approval
 * gate, and the chat door (InboundRouter) building on a shared desk. Each agent has its own model, so
 * the fake server's recorded model tells which agent answered.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { createModelRouter } from "../models/router.js";
import { createAgentHost, type AgentHostImpl } from "../agent/host.js";
import type { AgentEvent } from "../core/agent-events.js";
import { FrontDesk, NOT_AN_APPROVER, SessionKeyError } from "./front-desk.js";
import { InboundRouter, type InboundChat } from "./chat-router.js";
import type { ReplyRelay, ReplyStreamPort, RelayOutcome } from "./reply-relay.js";

let llm: FakeOpenAI;
let core: TestCore;
let host: AgentHostImpl;
let desk: FrontDesk;

beforeAll(async () => {
  llm = await startFakeOpenAI();
});
afterAll(async () => {
  await llm.close();
});
beforeEach(() => {
  core = createTestCore({
    models: {
      providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
      primary: "fake/main-model",
      max_retries: 0,
    },
    agents: { helper: { model: "fake/helper-model" }, research: { model: "fake/research-model" } },
    routing: [
      { channel: "telegram", agent: "research" },
      { channel: "telegram", chat: "42", agent: "helper" },
      { channel: "telegram", chat: "43", agent: "gone-agent" },
      { channel: "gateway", chat: "desk", agent: "helper" },
    ],
  });
  const c = core;
  const router = createModelRouter({
    config: () => c.ctx.config(),
    logger: c.ctx.logger,
    clock: c.ctx.clock,
  });
  host = createAgentHost({ ctx: c.ctx, model: router });
  desk = new FrontDesk({ ctx: c.ctx, host, agentSources: [] });
});
afterEach(async () => {
  await host.drain(5_000);
  core.close();
  llm.reset();
});

/** The system note the prompt carries for the origin of the newest message. */
function lastRequestText(): string {
  return JSON.stringify(llm.requests.at(-1)?.body?.messages ?? []);
}

describe("the front desk", () => {
  it("routes: the agent a door names > the /agent choice > routing (chat beats channel) > default", async () => {
    const chat = (chatId: string) => ({ chatId, scope: `telegram:${chatId}` });
    const tg = (chatId: string, agentId?: string) =>
      desk.route({
        channel: "telegram",
        ...(agentId ? { agentId } : {}),
        from: chat(chatId),
        session: { dm: chatId },
      }).agentId;
    expect(tg("42")).toBe("helper");
    expect(tg("7")).toBe("research");
    // A routing entry naming an undefined agent falls through to the next rule.
    expect(tg("43")).toBe("research");
    expect(tg("42", "main")).toBe("main");
    // `/agent` through the desk is the choice the desk routes by.
    const at = {
      channel: "telegram",
      ...desk.route({ channel: "telegram", from: chat("42"), session: { dm: "42" } }),
    };
    const caller = {
      chatScope: "telegram:42",
      chatId: "42",
      sender: { id: "42" },
      approver: { target: "telegram:42" },
    };
    expect(await desk.command({ name: "agent", args: "research" }, at, caller)).toContain("research");
    expect(tg("42")).toBe("research");
    // No chat and no named agent (a `/v1` `familiar` call, a webhook without `agent`): the default.
    expect(desk.route({ channel: "api", session: { gateway: "v1" } }).agentId).toBe("main");
    expect(
      desk.route({
        channel: "gateway",
        from: { chatId: "desk", scope: "gateway:desk" },
        session: { named: "desk" },
      }),
    ).toEqual({ agentId: "helper", sessionKey: "agent:helper:gateway:desk" });
  });

  it("builds every door's session key after routing, and refuses a name that cannot be a key", () => {
    const key = (session: Parameters<FrontDesk["route"]>[0]["session"], channel = "telegram") =>
      desk.route({ channel, agentId: "helper", session }).sessionKey;
    expect(key({ dm: "42" })).toBe("agent:helper:telegram:dm:42");
    expect(key({ group: "-100", threadId: "9" })).toBe("agent:helper:telegram:group:-100:thread:9");
    expect(key({ gateway: "v1" }, "api")).toBe("agent:helper:gateway:v1");
    expect(key({ named: "notes" }, "gateway")).toBe("agent:helper:gateway:notes");
    expect(key({ named: "agent:main:gateway:x" }, "gateway")).toBe("agent:main:gateway:x");
    expect(key({ named: "heartbeat" }, "hook")).toBe("heartbeat");
    expect(key({ key: "agent:research:gateway:kept" }, "api")).toBe("agent:research:gateway:kept");
    expect(() => key({ gateway: "two words" }, "api")).toThrow(SessionKeyError);
  });

  it("admits a turn: routed agent, sender, origin, reply target, and the durability hook in the commit", async () => {
    llm.enqueue({ text: "hello Ann" });
    const accepted: { requestId: string; stored: boolean }[] = [];
    const events: AgentEvent["type"][] = [];
    const handle = desk.admit(
      {
        channel: "telegram",
        from: { chatId: "42", scope: "telegram:42" },
        session: { dm: "42" },
        text: "hi",
        sender: { id: "42", name: "Ann" },
        originLabel: "Telegram DM from Ann",
        replyTarget: "telegram:42",
        onAccepted: (ids) =>
          accepted.push({
            requestId: ids.requestId,
            // Inside the transaction: the user message is already there.
            stored: host.sessions.head("agent:helper:telegram:dm:42") !== undefined,
          }),
      },
      (e) => events.push(e.type),
    );
    expect(accepted).toEqual([{ requestId: handle.requestId, stored: true }]);
    const r = await handle.result;
    expect(r.text).toBe("hello Ann");
    expect(llm.requests.at(-1)?.model).toBe("helper-model");
    expect(lastRequestText()).toContain("Message from: Telegram DM from Ann.");
    expect(events.at(-1)).toBe("turn_end");
    const head = host.sessions.head("agent:helper:telegram:dm:42");
    expect(head?.agent_id).toBe("helper");
    expect(host.sessions.messages(r.sessionId).map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "hello Ann"],
    ]);
  });

  it("an ephemeral turn stores nothing and carries the door's history and system text", async () => {
    llm.enqueue({ text: "stateless" });
    const r = await desk.admit({
      channel: "api",
      session: { gateway: "v1" },
      text: "and now?",
      originLabel: "OpenAI-compatible API",
      extraSystem: "Answer in one word.",
      ephemeral: { history: [{ role: "user", content: "earlier" }] },
    }).result;
    expect(r.text).toBe("stateless");
    expect(llm.requests.at(-1)?.model).toBe("main-model");
    expect(lastRequestText()).toContain("earlier");
    expect(lastRequestText()).toContain("Answer in one word.");
    expect(host.sessions.head("agent:main:gateway:v1")).toBeUndefined();
  });

  it("answers commands without the model; approvals only from those the door lets decide", async () => {
    const at = { channel: "telegram", agentId: "main", sessionKey: "agent:main:telegram:group:-5" };
    const caller = {
      chatScope: "telegram:-5",
      chatId: "-5",
      sender: { id: "9" },
      approver: { target: "telegram:-5" },
    };
    expect(await desk.command({ name: "approve", args: "a1" }, at, { ...caller, mayApprove: false })).toBe(
      NOT_AN_APPROVER,
    );
    expect(await desk.command({ name: "approve", args: "a1" }, at, caller)).toBe(
      "Approvals are not available.",
    );
    expect(await desk.command({ name: "voice", args: "on" }, at, caller)).toBe(
      "Voice replies are not available here.",
    );
    expect(desk.parseCommand("/help@otherbot", "familiar_bot")).toBeUndefined();
    expect(desk.parseCommand("/agent helper")).toEqual({ name: "agent", args: "helper" });
    expect(llm.requests).toHaveLength(0);
  });
});

/** The chat door's renderer, kept in memory: what a channel's relay would send. */
class MemoryRelay implements ReplyRelay {
  readonly sent: string[] = [];
  readonly adapter = {};
  async sendText(_chat: string, text: string): Promise<void> {
    this.sent.push(text);
  }
  stream(): ReplyStreamPort {
    let finish: (o: RelayOutcome) => void = () => undefined;
    const done = new Promise<RelayOutcome>((r) => (finish = r));
    return {
      startTyping: () => undefined,
      onEvent: (e) => {
        if (e.type !== "turn_end") return;
        this.sent.push(e.text);
        finish({ finalMessageIds: [String(this.sent.length)], previewEdits: 0, fellBack: false });
      },
      done,
    };
  }
}

describe("the chat door on a shared desk", () => {
  it("routes through the desk it is given: a /agent choice made in the chat picks the agent of its turns", async () => {
    const relay = new MemoryRelay();
    const router = new InboundRouter({ ctx: core.ctx, desk, host, relay });
    expect(router.desk).toBe(desk);
    const msg = (text: string): InboundChat => ({
      channel: "telegram",
      chatId: "77",
      isGroup: false,
      sender: { id: "77", name: "Bob" },
      text,
    });
    expect(router.agentFor(msg("x"))).toBe("research");
    const cmd = await router.handle(msg("/agent helper"));
    expect(cmd.kind).toBe("command");
    // The choice is the desk's: every door that routes this chat sees it.
    expect(
      desk.route({ channel: "telegram", from: { chatId: "77", scope: "telegram:77" }, session: { dm: "77" } })
        .agentId,
    ).toBe("helper");
    llm.enqueue({ text: "from helper" });
    const turn = await router.handle(msg("hello"));
    expect(turn.kind).toBe("turn");
    expect(llm.requests.at(-1)?.model).toBe("helper-model");
    expect(relay.sent.at(-1)).toBe("from helper");
    expect(host.sessions.head("agent:helper:telegram:dm:77")?.agent_id).toBe("helper");
  });
});
