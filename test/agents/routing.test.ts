/**
 * Which agent answers, through the running daemon with the fake Telegram Bot API and the fake model:
 * explicit (`/agent <id>` in a chat, the agent named in a gateway request) > `routing` (chat beats
 * channel-wide) > `agents.default`; a routing entry or choice naming an undefined agent falls through;
 * and the echo agent answers (and says why) when the agent cannot be built. Each agent has its own
 * model, so the fake server's recorded model tells which agent answered.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
import { waitTelegramConnected } from "../helpers/telegram-daemon.js";
import { createTestCore, type TestCore } from "../helpers/core.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createAgentHost } from "../../internal/agent/host.js";
import { FileAgentSource } from "../../internal/agent/catalog/file-agents.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
const ann: FakeUser = { id: 7001, first_name: "Ann" };
const bob: FakeUser = { id: 7002, first_name: "Bob" };
const cat: FakeUser = { id: 7003, first_name: "Cat" };
const dirs: string[] = [];

beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram();
});
afterAll(async () => {
  await tg.close();
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  llm.reset();
});

function telegramConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    models: {
      providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
      primary: "fake/default-model",
      max_retries: 0,
    },
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "allowlist",
        allow_from: [ann.id, bob.id, cat.id],
        stream: { edit_interval_ms: 200 },
      },
    },
    gateway: { token: "tok" },
    ...extra,
  };
}

/** A daemon whose workspace already holds the `scout` agent file. */
async function startWith(extra: Record<string, unknown>): Promise<DaemonProcess> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-routing-"));
  dirs.push(dir);
  mkdirSync(join(dir, "workspace", "agents"), { recursive: true });
  writeFileSync(join(dir, "workspace", "agents", "scout.yaml"), "name: scout\nmodel: fake/scout-model\n");
  const d = await startDaemonProcess({ dir, config: telegramConfig(extra) });
  await waitTelegramConnected(d);
  return d;
}

/** Sends a DM and resolves with the bot's new reply text (after streaming edits settle on `until`). */
async function say(user: FakeUser, text: string, until: (reply: string) => boolean): Promise<string> {
  const before = tg.visible(user.id).length;
  tg.pushText(user, text);
  let reply = "";
  await tg.waitFor(
    () => {
      const m = tg.visible(user.id).slice(before).at(-1);
      reply = m?.text ?? "";
      return m !== undefined && until(reply);
    },
    20_000,
    `reply to ${user.first_name}: ${text}`,
  );
  return reply;
}

/** Sends a DM answered by the model and returns which model (so which agent) answered. */
async function modelFor(user: FakeUser, text: string): Promise<string | undefined> {
  const n = llm.requests.length;
  const answer = `answer to ${text}`;
  llm.enqueue({ text: answer });
  await say(user, text, (r) => r === answer);
  return llm.requests.slice(n).at(-1)?.model;
}

describe("routing in the running daemon", () => {
  it("explicit > routing (chat beats channel) > default, and undefined agents fall through", async () => {
    const d = await startWith({
      agents: { helper: { model: "fake/helper-model" }, research: { model: "fake/research-model" } },
      routing: [
        { channel: "telegram", chat: String(cat.id), agent: "gone-agent" },
        { channel: "telegram", agent: "research" },
        { channel: "telegram", chat: String(bob.id), agent: "helper" },
        { channel: "discord", agent: "helper" },
      ],
    });
    // Channel-wide routing for Ann; the chat entry beats it for Bob whatever the order in the list.
    expect(await modelFor(ann, "one")).toBe("research-model");
    expect(await modelFor(bob, "two")).toBe("helper-model");
    // Cat's chat entry names an agent nobody defines: the next rule (channel-wide) answers.
    expect(await modelFor(cat, "three")).toBe("research-model");

    // `/agent <id>` beats routing; a file agent is reachable; `/agent default` goes back to routing.
    expect(await say(bob, "/agent scout", (r) => r.includes("scout"))).toBe(
      "This chat now talks to agent scout.",
    );
    expect(await modelFor(bob, "four")).toBe("scout-model");
    expect(await say(bob, "/agent", (r) => r.startsWith("Agent:"))).toContain(
      "Agent: scout (chosen for this chat",
    );
    await say(bob, "/agent default", (r) => r.includes("routed/default"));
    expect(await modelFor(bob, "five")).toBe("helper-model");
    expect(await say(bob, "/agent nobody", (r) => r.includes("Unknown"))).toMatch(/^Unknown agent "nobody"/);

    // A chosen agent whose file disappears: the chat falls back to routing instead of failing.
    await say(ann, "/agent scout", (r) => r.includes("scout"));
    expect(await modelFor(ann, "six")).toBe("scout-model");
    rmSync(join(d.workspace, "agents", "scout.yaml"));
    const headers = { authorization: "Bearer tok" };
    for (let i = 0; i < 400; i++) {
      if ((await fetch(`${d.url}/api/agents/scout`, { headers })).status === 404) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(await modelFor(ann, "seven")).toBe("research-model");

    // The gateway: an explicit agent in the request wins; without one, the default answers.
    const chat = async (model: string): Promise<string | undefined> => {
      const n = llm.requests.length;
      const r = await fetch(`${d.url}/v1/chat/completions`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(r.status).toBe(200);
      return llm.requests.slice(n).at(-1)?.model;
    };
    expect(await chat("familiar/helper")).toBe("helper-model");
    expect(await chat("familiar")).toBe("default-model");
  });

  it("an unknown default agent is answered by the echo agent, which says so", async () => {
    const d = await startWith({ agents: { default: "ghost" } });
    const reply = await say(ann, "hi there", (r) => r.includes("echo: hi there"));
    expect(reply).toContain("[echo agent]");
    expect(reply).toContain("ghost");
    expect(reply).toContain("cannot be built");
    expect(llm.requests).toHaveLength(0);
    // An explicitly chosen, working agent still answers normally.
    await say(ann, "/agent scout", (r) => r.includes("scout"));
    expect(await modelFor(ann, "real question")).toBe("scout-model");
    // The OpenAI-compatible API's `familiar` model is the default agent too: the echo agent answers.
    const before = llm.requests.length;
    const res = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer tok", "content-type": "application/json" },
      body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "via v1" }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toContain("[echo agent]");
    expect(body.choices[0]?.message.content).toContain('"ghost"');
    expect(body.choices[0]?.message.content).toContain("echo: via v1");
    expect(llm.requests).toHaveLength(before);
  });
});

describe("echo fallback in the agent host", () => {
  let core: TestCore | undefined;
  afterEach(() => core?.close());

  it("answers for a default agent whose provider is not configured, and the session stays the agent's", async () => {
    core = createTestCore({
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
        primary: "fake/m",
        max_retries: 0,
      },
      agents: { default: "helper" },
    });
    // config.yaml refuses a model of a provider not configured (config/model-provider-check.ts); a
    // workspace agent file can still name one, and the echo agent answers for it.
    mkdirSync(join(core.dir, "workspace", "agents"), { recursive: true });
    writeFileSync(
      join(core.dir, "workspace", "agents", "helper.yaml"),
      "name: helper\nmodel: nowhere/big-model\n",
    );
    const c = core;
    const router = createModelRouter({
      config: () => c.ctx.config(),
      logger: c.ctx.logger,
      clock: c.ctx.clock,
    });
    const files = new FileAgentSource(() => c.ctx.config(), c.ctx.logger);
    files.load();
    const host = createAgentHost({ ctx: c.ctx, model: router, agentSources: [files] });
    const r = await host.submit({ channel: "gateway", sessionKey: "gateway:x", text: "ping" }).result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe(
      '[echo agent] The default agent "helper" cannot be built: its model nowhere/big-model names provider "nowhere", which is not configured under models.providers. Fix its definition; until then the echo agent answers.\n\necho: ping',
    );
    expect(llm.requests).toHaveLength(0);
    expect(host.sessions.head("gateway:x")?.agent_id).toBe("helper");
    expect(host.sessions.messages(r.sessionId).map((m) => [m.role, m.content])).toEqual([
      ["user", "ping"],
      ["assistant", r.text],
    ]);

    // Fixed by a config reload: the same session is answered by the model again.
    c.setConfig({
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
        primary: "fake/m",
        max_retries: 0,
      },
      agents: { main: { model: "fake/big-model" } },
    });
    llm.enqueue({ text: "pong" });
    const r2 = await host.submit({ channel: "gateway", sessionKey: "gateway:x", text: "ping" }).result;
    expect(r2.text).toBe("pong");
    expect(llm.requests.at(-1)?.model).toBe("big-model");
  });

  it("a session's own model (/model) keeps an agent with a bad model usable", async () => {
    core = createTestCore({
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
        primary: "fake/m",
        max_retries: 0,
      },
      agents: { default: "helper" },
    });
    // config.yaml refuses a model of a provider not configured (config/model-provider-check.ts); a
    // workspace agent file can still name one, and the echo agent answers for it.
    mkdirSync(join(core.dir, "workspace", "agents"), { recursive: true });
    writeFileSync(
      join(core.dir, "workspace", "agents", "helper.yaml"),
      "name: helper\nmodel: nowhere/big-model\n",
    );
    const c = core;
    const router = createModelRouter({
      config: () => c.ctx.config(),
      logger: c.ctx.logger,
      clock: c.ctx.clock,
    });
    const files = new FileAgentSource(() => c.ctx.config(), c.ctx.logger);
    files.load();
    const host = createAgentHost({ ctx: c.ctx, model: router, agentSources: [files] });
    host.setSessionModel("gateway:z", "fake/chosen-model");
    llm.enqueue({ text: "from the chosen model" });
    const r = await host.submit({ channel: "gateway", sessionKey: "gateway:z", text: "hi" }).result;
    expect(r.text).toBe("from the chosen model");
    expect(llm.requests.at(-1)?.model).toBe("chosen-model");
  });

  it("an unknown explicit agent is an error, not an echo", async () => {
    core = createTestCore({});
    const c = core;
    const router = createModelRouter({
      config: () => c.ctx.config(),
      logger: c.ctx.logger,
      clock: c.ctx.clock,
    });
    const host = createAgentHost({ ctx: c.ctx, model: router });
    const r = await host.submit({ channel: "gateway", sessionKey: "gateway:y", agentId: "nobody", text: "x" })
      .result;
    expect(r).toMatchObject({
      finishReason: "error",
      error: { code: "AGENT_UNKNOWN", message: 'unknown agent "nobody"' },
    });
  });
});
