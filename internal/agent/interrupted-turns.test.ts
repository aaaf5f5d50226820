/**
 * Interrupted turns (user message stored, no final answer: the process died) are found and answered
 * once after a restart; answered, old, subagent and cron turns are left alone.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { FakeClock } from "../core/clock.js";
import { createModelRouter } from "../models/router.js";
import { createAgentHost } from "./host.js";
import { SessionStore } from "../session/session-store.js";
import { findInterruptedTurns, resumeInterruptedTurns } from "./interrupted-turns.js";

let llm: FakeOpenAI;
let core: TestCore | undefined;
beforeAll(async () => {
  llm = await startFakeOpenAI();
});
afterAll(async () => {
  await llm.close();
});
afterEach(() => {
  core?.close();
  core = undefined;
  llm.reset();
});

function setup(clock: FakeClock): { core: TestCore; sessions: SessionStore } {
  core = createTestCore(
    {
      models: {
        providers: { a: { base_url: llm.baseUrl, api_key: "sk-a" } },
        primary: "a/m1",
        max_retries: 0,
      },
    },
    { clock },
  );
  return { core, sessions: new SessionStore(core.db, () => clock.now()) };
}

describe("interrupted turns", () => {
  it("answers each interrupted turn once, in its own session, and delivers to the origin", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { core: c, sessions } = setup(clock);
    // What a crashed process leaves behind.
    const tg = sessions.create("agent:main:telegram:dm:42", "main", { origin: "telegram:42" });
    const tgMsg = sessions.append(tg.id, { role: "user", content: "are you there?", requestId: "r-tg" });
    const gw = sessions.create("agent:main:gateway:g1", "main");
    sessions.append(gw.id, { role: "user", content: "first", requestId: "r-1" });
    sessions.append(gw.id, { role: "assistant", content: "answer 1", requestId: "r-1" });
    sessions.append(gw.id, { role: "user", content: "second", requestId: "r-2" });
    // A tool call without a final answer still counts as interrupted.
    sessions.append(gw.id, {
      role: "assistant",
      content: "",
      toolCalls: [{ id: "c1", name: "noop", arguments: "{}" }],
      requestId: "r-2",
    });
    const sub = sessions.create("agent:helper:subagent:dm:t1", "helper", { origin: "telegram:42" });
    sessions.append(sub.id, { role: "user", content: "sub job", requestId: "r-sub" });
    const cron = sessions.create("cron:job1", "main");
    sessions.append(cron.id, { role: "user", content: "cron job", requestId: "r-cron" });

    const found = findInterruptedTurns(c.db, { now: clock.now() });
    expect(found.map((t) => [t.sessionKey, t.text])).toEqual([
      ["agent:main:telegram:dm:42", "are you there?"],
      ["agent:main:gateway:g1", "second"],
    ]);
    expect(found[0]).toMatchObject({ messageId: tgMsg, origin: "telegram:42", requestId: "r-tg" });

    const host = createAgentHost({
      ctx: c.ctx,
      model: createModelRouter({ config: () => c.ctx.config(), logger: c.ctx.logger }),
    });
    const delivered: [string, string][] = [];
    const out = resumeInterruptedTurns({
      ctx: c.ctx,
      host,
      deliver: async (target, text) => void delivered.push([target, text]),
    });
    expect(out.count).toBe(2);
    await out.done;
    expect(delivered).toEqual([["telegram:42", "echo: are you there?"]]);
    // Nothing stored twice: the stored user message is reused, the answer carries its request id.
    const tgRows = sessions.messages(tg.id).map((m) => [m.role, m.content, m.request_id]);
    expect(tgRows).toEqual([
      ["user", "are you there?", "r-tg"],
      ["assistant", "echo: are you there?", "r-tg"],
    ]);
    expect(sessions.messages(gw.id).filter((m) => m.role === "user")).toHaveLength(2);
    // The model saw the interrupted tool call closed with an error result, then answered.
    expect(llm.requests).toHaveLength(2);
    expect(findInterruptedTurns(c.db, { now: clock.now() })).toEqual([]);
  });

  it("tells the origin when the resumed turn fails, once", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { core: c, sessions } = setup(clock);
    const s = sessions.create("agent:main:telegram:dm:9", "main", { origin: "telegram:9" });
    sessions.append(s.id, { role: "user", content: "still there?", requestId: "r-f" });
    llm.setHandler(() => ({ error: { status: 401 } }));
    const host = createAgentHost({
      ctx: c.ctx,
      model: createModelRouter({ config: () => c.ctx.config(), logger: c.ctx.logger }),
    });
    const delivered: string[] = [];
    const out = resumeInterruptedTurns({
      ctx: c.ctx,
      host,
      deliver: async (_t, text) => void delivered.push(text),
    });
    await out.done;
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatch(/a\/m1/);
    expect(sessions.messages(s.id).map((m) => [m.role, m.status])).toEqual([
      ["user", "ok"],
      ["assistant", "error"],
    ]);
  });

  it("leaves messages older than the window alone", () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { core: c, sessions } = setup(clock);
    const s = sessions.create("agent:main:gateway:old", "main");
    sessions.append(s.id, { role: "user", content: "long ago", requestId: "r-old" });
    clock.jump(clock.now() + 16 * 60_000);
    expect(findInterruptedTurns(c.db, { now: clock.now() })).toEqual([]);
    expect(findInterruptedTurns(c.db, { now: clock.now(), maxAgeMs: 60 * 60_000 })).toHaveLength(1);
  });

  it("retries a delivery while the channel is still connecting", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { core: c, sessions } = setup(clock);
    const s = sessions.create("agent:main:discord:dm:7", "main", { origin: "discord:7" });
    sessions.append(s.id, { role: "user", content: "hello?", requestId: "r-d" });
    const host = createAgentHost({
      ctx: c.ctx,
      model: createModelRouter({ config: () => c.ctx.config(), logger: c.ctx.logger }),
    });
    let attempts = 0;
    const out = resumeInterruptedTurns({
      ctx: c.ctx,
      host,
      deliver: async () => {
        attempts++;
        if (attempts < 3) throw new Error("discord: not connected yet");
      },
    });
    while (attempts < 3) {
      await new Promise((r) => setTimeout(r, 5));
      await clock.advance(2000);
    }
    await out.done;
    expect(attempts).toBe(3);
  });
});
