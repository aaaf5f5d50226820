import { describe, expect, it } from "vitest";
import { fakeModels, startHarness, until, schedulerSuite } from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { sessionKeys } from "../session/keys.js";
import { createCronService, type CronService } from "./cron-service.js";
import { CronStore } from "./cron-store.js";
import { createCronTool } from "./cron-tool.js";
import { parseJobInput } from "./job.js";
import type { ToolContext } from "../tools/tool.js";

const MIN = 60_000;
const HOUR = 60 * MIN;
const suite = schedulerSuite();

async function setup(
  config: Record<string, unknown>,
  opts: { clock?: FakeClock; dir?: string; pollClock?: FakeClock } = {},
) {
  const h = await startHarness(suite.fake, config, opts);
  const svc = createCronService(h.core.ctx, {
    host: h.host,
    outbox: h.channels,
    pollClock: opts.pollClock ?? new FakeClock(),
  });
  await svc.start();
  suite.keep(h, svc);
  return { h, svc, clock: h.clock };
}

const idle = (svc: CronService) => until(() => svc.list().every((j) => !j.running), "cron runs to finish");

/** Advances in steps, letting every run that fell due finish (over the real socket) before going on. */
async function advance(svc: CronService, clock: FakeClock, ms: number, step = 10 * MIN): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    await clock.advance(Math.min(step, ms - done));
    await idle(svc);
  }
}

const job = (over: Record<string, unknown>) => ({ message: "ping", deliver: "none", ...over });
const started = (svc: CronService, id: string) =>
  svc
    .runs(id, 100)
    .filter((r) => r.status !== "skipped")
    .map((r) => new Date(r.startedAt).toISOString())
    .reverse();
const toolCtx = (over: Partial<ToolContext> = {}): ToolContext => ({
  sessionKey: "agent:main:test:dm:owner",
  sessionId: "s1",
  agentId: "main",
  workspace: "/tmp",
  replyTarget: "test:owner",
  requestId: "r1",
  depth: 0,
  logger: undefined as never,
  requestApproval: async () => "denied",
  ...over,
});

describe("cron service", () => {
  it("fires cron, every and at schedules at the right instants across DST in Europe/Berlin", async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 27, 12));
    const { svc } = await setup(
      {
        timezone: "Europe/Berlin",
        cron: {
          jobs: [
            job({ id: "morning", cron: "0 9 * * *" }),
            job({ id: "often", every: "20h" }),
            job({ id: "once", at: "2026-03-29T09:30" }),
          ],
        },
      },
      { clock },
    );
    expect(svc.get("morning")?.nextRunAt).toBe(Date.UTC(2026, 2, 28, 8));
    await advance(svc, clock, 4 * 24 * HOUR, HOUR);
    expect(started(svc, "morning")).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
      "2026-03-31T07:00:00.000Z",
    ]);
    expect(started(svc, "often")).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T04:00:00.000Z",
      "2026-03-30T00:00:00.000Z",
      "2026-03-30T20:00:00.000Z",
    ]);
    expect(started(svc, "once")).toEqual(["2026-03-29T07:30:00.000Z"]);
    expect(svc.get("once")).toMatchObject({ completed: true, nextRunAt: null, lastStatus: "ok" });
    expect(svc.runs("morning", 1)[0]).toMatchObject({ status: "ok", outputPreview: "echo: ping" });
    expect(svc.runs("morning", 1)[0]!.tokens).toBeGreaterThan(0);
  });

  it("autumn DST: 09:00 stays 09:00 local", async () => {
    const clock = new FakeClock(Date.UTC(2026, 9, 24, 12));
    const { svc } = await setup(
      { cron: { jobs: [job({ id: "r", cron: "0 9 * * *", timezone: "Europe/Berlin" })] } },
      { clock },
    );
    await advance(svc, clock, 2 * 24 * HOUR, HOUR);
    expect(started(svc, "r")).toEqual(["2026-10-25T08:00:00.000Z", "2026-10-26T08:00:00.000Z"]);
  });

  it("isolated jobs use cron:<id>; main jobs use the owner's last session, else the gateway main session", async () => {
    const { h, svc, clock } = await setup({
      cron: { jobs: [job({ id: "iso", every: "1h" }), job({ id: "mainjob", every: "1h", session: "main" })] },
    });
    await advance(svc, clock, HOUR);
    expect(svc.runs("iso", 1)[0]?.sessionKey).toBe("cron:iso");
    expect(svc.runs("mainjob", 1)[0]?.sessionKey).toBe(sessionKeys.gateway("main", "main"));
    // The owner writes from the test channel: that session becomes "main".
    h.channels.setLastTarget("test:owner");
    const ownerKey = sessionKeys.dm("main", "test", "owner");
    await h.host.submit({ channel: "test", sessionKey: ownerKey, text: "remember the milk" }).result;
    await advance(svc, clock, HOUR);
    expect(svc.runs("mainjob", 1)[0]?.sessionKey).toBe(ownerKey);
    const last = suite.fake.requests.at(-1)?.body?.messages ?? [];
    expect(JSON.stringify(last)).toContain("remember the milk");
  });

  it("honours light_context, enabled and agent per job", async () => {
    const { h, svc, clock } = await setup({
      agents: { helper: { description: "second agent" } },
      cron: {
        jobs: [
          job({ id: "lite", every: "1h", message: "lite run" }),
          job({ id: "full", every: "1h", message: "full run", light_context: false }),
          job({ id: "off", every: "1h", message: "never run", enabled: false }),
          job({ id: "helped", every: "1h", message: "helper run", agent: "helper" }),
        ],
      },
    });
    writeFileSync(join(h.core.ctx.config().workspace, "USER.md"), "The owner likes tea. USER-MARKER\n");
    await advance(svc, clock, HOUR);
    const systemOf = (text: string): string => {
      const req = suite.fake.requests.find((r) => JSON.stringify(r.body?.messages ?? []).includes(text));
      return JSON.stringify(req?.body?.messages?.[0] ?? null);
    };
    expect(systemOf("lite run")).not.toContain("USER-MARKER");
    expect(systemOf("full run")).toContain("USER-MARKER");
    expect(svc.runs("off")).toEqual([]);
    expect(svc.get("off")).toMatchObject({ enabled: false, nextRunAt: null });
    expect(suite.fake.requests.some((r) => JSON.stringify(r.body).includes("never run"))).toBe(false);
    const agentOf = h.core.ctx.db
      .prepare(
        "SELECT s.agent_id AS a FROM session_heads hd JOIN sessions s ON s.id = hd.session_id WHERE hd.key = ?",
      )
      .get(sessionKeys.cron("helped")) as { a: string };
    expect(agentOf.a).toBe("helper");
  });

  it("after a restart, main jobs still run in the owner's main session and 'last' still resolves", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    const cfg = { cron: { jobs: [job({ id: "mainjob", every: "1h", session: "main", deliver: "last" })] } };
    const first = await setup(cfg, { clock });
    first.h.channels.setLastTarget("test:owner");
    const ownerKey = sessionKeys.dm("main", "test", "owner");
    await first.h.host.submit({ channel: "test", sessionKey: ownerKey, text: "remember the milk" }).result;
    await first.svc.stop();
    first.h.core.db.close();
    const second = await setup(cfg, { clock, dir: first.h.core.dir });
    await advance(second.svc, clock, HOUR);
    expect(second.svc.runs("mainjob", 1)[0]).toMatchObject({
      sessionKey: ownerKey,
      status: "ok",
      delivered: true,
    });
    expect(second.h.channel.sent.map((m) => m.target)).toEqual(["owner"]);
  });

  it("delivers the result to a channel target and to the last target", async () => {
    const { h, svc, clock } = await setup({
      cron: {
        jobs: [
          job({ id: "direct", every: "1h", deliver: "test:chat-1", message: "water the plants" }),
          job({ id: "tolast", every: "1h", deliver: "last", message: "stretch" }),
        ],
      },
    });
    await advance(svc, clock, HOUR);
    expect(h.channel.sent.map((m) => [m.target, m.text])).toEqual([["chat-1", "echo: water the plants"]]);
    // No channel chat with the owner yet: not a failure; the whole reply is kept in the run.
    expect(svc.get("tolast")).toMatchObject({ lastStatus: "ok", failures: 0 });
    expect(svc.runs("tolast", 1)[0]).toMatchObject({
      status: "ok",
      delivered: false,
      outputPreview: "echo: stretch",
    });
    h.channels.setLastTarget("test:owner");
    await svc.runNow("tolast");
    expect(h.channel.sent.at(-1)).toMatchObject({ target: "owner", text: "echo: stretch" });
    expect(svc.get("tolast")).toMatchObject({ lastStatus: "ok", failures: 0, lastError: null });
  });

  it("skips a due run while the previous one still runs, and logs it", async () => {
    const { h, svc, clock } = await setup({ cron: { jobs: [job({ id: "slow", every: "1m" })] } });
    suite.fake.enqueue({ hang: true });
    await clock.advance(MIN);
    await until(() => suite.fake.requests.length === 1, "first model call");
    await clock.advance(MIN);
    await clock.advance(MIN);
    expect(svc.runs("slow").map((r) => r.status)).toEqual(["skipped", "skipped", "running"]);
    expect(svc.runs("slow")[0]?.error).toBe("the previous run was still running");
    h.host.abort("cron:slow");
    await idle(svc);
    expect(svc.runs("slow")[2]).toMatchObject({ status: "error" });
    expect(suite.fake.requests).toHaveLength(1);
  });

  it("backs off a failing job (1, 5, 15, 60 min), shows the last error, and recovers", async () => {
    const start = Date.UTC(2026, 0, 1);
    const { svc, clock } = await setup({ cron: { jobs: [job({ id: "flaky", every: "1m" })] } });
    suite.fake.setHandler(() => ({ error: { status: 400, message: "bad request from the provider" } }));
    await advance(svc, clock, 100 * MIN, MIN);
    const offsets = svc
      .runs("flaky", 50)
      .reverse()
      .map((r) => (r.startedAt - start) / MIN);
    expect(offsets).toEqual([1, 2, 7, 22, 82]);
    const view = svc.get("flaky")!;
    expect(view).toMatchObject({ lastStatus: "error", failures: 5 });
    expect(view.lastError).toContain("bad request");
    expect(view.nextRunAt).toBe(start + 142 * MIN);
    expect(svc.health().state).toBe("degraded");
    suite.fake.setHandler(undefined);
    await advance(svc, clock, 45 * MIN, MIN);
    expect(svc.get("flaky")).toMatchObject({ lastStatus: "ok", failures: 0, lastError: null });
    expect(svc.get("flaky")?.nextRunAt).toBe(clock.now() + MIN);
  });

  it("tells the job's target once when it starts failing, and when a one-shot gives up", async () => {
    const { h, svc, clock } = await setup({
      cron: {
        jobs: [
          job({ id: "flaky", every: "1m", deliver: "test:owner", message: "check the mail" }),
          job({ id: "remind", at: "2026-01-01T00:30", deliver: "test:owner", message: "call mum" }),
        ],
      },
    });
    suite.fake.setHandler(() => ({ error: { status: 400, message: "bad request from the provider" } }));
    await advance(svc, clock, 60 * MIN, MIN);
    const err = `The model provider refused the request: fake/m1 at ${suite.fake.baseUrl} rejected the request (HTTP 400): bad request from the provider`;
    const notices = h.channel.sent.map((m) => [m.target, m.text]);
    expect(notices).toEqual([
      [
        "owner",
        `Scheduled job "flaky" failed: ${err}. Its next scheduled run tries again (not before 1 min). Details: familiar cron runs flaky`,
      ],
      [
        "owner",
        `Scheduled job "remind" failed: ${err}. It will be retried in 1 min. Details: familiar cron runs remind`,
      ],
      ["owner", `Scheduled job "remind" failed 3 times and was given up: ${err}`],
    ]);
    expect(svc.runs("flaky", 50).filter((r) => r.status === "error").length).toBeGreaterThan(2);
    // After a success the next failure streak is reported again.
    suite.fake.setHandler(undefined);
    await advance(svc, clock, 60 * MIN, MIN);
    expect(svc.get("flaky")).toMatchObject({ lastStatus: "ok", failures: 0 });
    const before = h.channel.sent.length;
    suite.fake.setHandler(() => ({ error: { status: 400, message: "down again" } }));
    await advance(svc, clock, 10 * MIN, MIN);
    expect(h.channel.sent.slice(before).filter((m) => m.text.includes("failed"))).toEqual([
      expect.objectContaining({ text: expect.stringContaining("(HTTP 400): down again. Its next") }),
    ]);
  });

  it("runs a missed run once at start with catch_up, and not without it", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 6));
    const jobs = [
      job({ id: "cu", cron: "0 9 * * *", catch_up: true }),
      job({ id: "nocu", cron: "0 9 * * *" }),
      job({ id: "remind", at: "2026-01-02T10:00", catch_up: true }),
    ];
    const first = await setup({ cron: { jobs } }, { clock });
    await advance(first.svc, clock, 4 * HOUR, HOUR);
    expect(started(first.svc, "cu")).toEqual(["2026-01-01T09:00:00.000Z"]);
    // The daemon goes down for three days.
    await first.svc.stop();
    first.h.core.db.close();
    clock.jump(Date.UTC(2026, 0, 4, 12));
    const second = await setup({ cron: { jobs } }, { clock, dir: first.h.core.dir });
    await idle(second.svc);
    expect(second.svc.runs("cu", 10).map((r) => [r.trigger, new Date(r.dueAt!).toISOString()])).toEqual([
      ["catch_up", "2026-01-02T09:00:00.000Z"],
      ["schedule", "2026-01-01T09:00:00.000Z"],
    ]);
    // Without catch_up the missed instants are skipped by policy, and recorded (one row for all three).
    expect(second.svc.runs("nocu", 10)[0]).toMatchObject({
      status: "skipped",
      outcome: "skipped",
      covers: 3,
      error: expect.stringContaining("skipped by policy (missed: skip)"),
    });
    expect(second.svc.runs("nocu", 10)).toHaveLength(2);
    expect(second.svc.runs("remind", 10).map((r) => r.trigger)).toEqual(["catch_up"]);
    expect(second.svc.get("remind")?.completed).toBe(true);
    expect(second.svc.get("cu")?.nextRunAt).toBe(Date.UTC(2026, 0, 5, 9));
  });

  it("reconciles config jobs on hot reload: adds, changes and removes without a restart", async () => {
    const { h, svc, clock } = await setup({ cron: { jobs: [job({ id: "a", every: "1h" })] } });
    const models = fakeModels(suite.fake);
    h.core.setConfig({
      models,
      cron: { jobs: [job({ id: "a", every: "30m", message: "changed" }), job({ id: "b", every: "2h" })] },
    });
    expect(svc.list().map((j) => [j.id, j.schedule])).toEqual([
      ["a", "every 30m"],
      ["b", "every 2h"],
    ]);
    await advance(svc, clock, 2 * HOUR);
    expect(svc.runs("a", 10)).toHaveLength(4);
    expect(svc.runs("a", 1)[0]?.outputPreview).toBe("echo: changed");
    expect(svc.runs("b", 10)).toHaveLength(1);
    h.core.setConfig({ models, cron: { jobs: [job({ id: "b", every: "2h" })] } });
    expect(svc.list().map((j) => j.id)).toEqual(["b"]);
    await advance(svc, clock, 2 * HOUR);
    expect(svc.runs("a", 10)).toHaveLength(4);
    expect(svc.runs("b", 10)).toHaveLength(2);
  });

  it("validates runtime jobs at creation and protects config jobs", () => {
    return (async () => {
      const { svc } = await setup({ cron: { jobs: [job({ id: "cfg", every: "1h" })] } });
      expect(() => svc.add(job({ id: "x", cron: "0 9 * * 8" }))).toThrow(
        /invalid cron job: cron: invalid cron expression/,
      );
      expect(() => svc.add(job({ id: "x", at: "2025-01-01T00:00Z" }))).toThrow(/in the past/);
      expect(() => svc.add(job({ id: "cfg", every: "1h" }))).toThrow(/already exists/);
      expect(() => svc.remove("cfg")).toThrow(/config.yaml/);
      expect(() => svc.remove("nope")).toThrow(/no cron job/);
    })();
  });

  it("a job the agent creates with the cron tool survives a restart and fires", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    const first = await setup({}, { clock });
    first.h.tools.register(createCronTool(first.svc));
    suite.fake.enqueue(
      {
        toolCalls: [
          { name: "cron", arguments: { action: "add", id: "tea", message: "tea time", cron: "0 16 * * *" } },
        ],
      },
      { text: "I will remind you at 16:00." },
    );
    const ownerKey = sessionKeys.dm("main", "test", "owner");
    const reply = await first.h.host.submit({
      channel: "test",
      sessionKey: ownerKey,
      text: "remind me at 4pm to have tea",
      replyTarget: "test:owner",
    }).result;
    expect(reply.text).toBe("I will remind you at 16:00.");
    expect(JSON.stringify(suite.fake.requests[1]?.body?.messages)).toContain("added tea [runtime]");
    expect(first.svc.get("tea")).toMatchObject({ source: "runtime", deliver: "test:owner" });
    await first.svc.stop();
    first.h.core.db.close();
    const second = await setup({}, { clock, dir: first.h.core.dir });
    expect(second.svc.get("tea")).toMatchObject({ source: "runtime", nextRunAt: Date.UTC(2026, 0, 1, 16) });
    await advance(second.svc, clock, 4 * HOUR, HOUR);
    expect(started(second.svc, "tea")).toEqual(["2026-01-01T16:00:00.000Z"]);
    expect(second.h.channel.sent).toMatchObject([{ target: "owner", text: "echo: tea time" }]);
  });

  it('"remind me in 2 minutes": the cron tool takes a time from now, fixed at creation, and it fires on time', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    const { svc, h } = await setup({}, { clock });
    const tool = createCronTool(svc);
    const signal = new AbortController().signal;
    await tool.execute(
      { action: "add", id: "tea", message: "tea time", at: "in 2 minutes", deliver: "test:owner" },
      signal,
      toolCtx(),
    );
    expect(svc.get("tea")).toMatchObject({ nextRunAt: Date.UTC(2026, 0, 1, 12, 2) });
    // A restart later must not move it: the stored job holds the absolute instant.
    expect(svc.get("tea")?.schedule).toContain("2026-01-01");
    await advance(svc, clock, 3 * MIN, MIN);
    expect(started(svc, "tea")).toEqual(["2026-01-01T12:02:00.000Z"]);
    expect(h.channel.sent).toMatchObject([{ target: "owner", text: "echo: tea time" }]);
    await expect(
      tool.execute({ action: "add", message: "x", at: "in two minutes" }, signal, toolCtx()),
    ).rejects.toThrow(/a time from now such as 2m/);
  });

  it("the cron tool lists, runs and removes jobs, and reports bad input to the model", async () => {
    const { svc } = await setup({ cron: { jobs: [job({ id: "cfg", every: "1h" })] } });
    const tool = createCronTool(svc);
    const signal = new AbortController().signal;
    expect(String(await tool.execute({ action: "list" }, signal, toolCtx()))).toContain(
      "cfg [config] every 1h",
    );
    expect(String(await tool.execute({ action: "run", id: "cfg" }, signal, toolCtx()))).toContain("run ok");
    await expect(
      tool.execute({ action: "add", message: "x", cron: "99 * * * *" }, signal, toolCtx()),
    ).rejects.toThrow(/invalid cron expression/);
    await expect(tool.execute({ action: "remove", id: "cfg" }, signal, toolCtx())).rejects.toThrow(
      /config.yaml/,
    );
    const added = await tool.execute({ action: "add", message: "hello", every: "1d" }, signal, toolCtx());
    const text = typeof added === "string" ? added : added.content;
    const id = /added (job-[0-9a-f]+)/.exec(text)?.[1];
    expect(id).toBeDefined();
    // The job is said by identity, so a tainted session's job carries its label (issue 44).
    expect(typeof added === "string" ? undefined : added.writes).toEqual({ jobs: [id] });
    expect(await tool.execute({ action: "remove", id: id! }, signal, toolCtx())).toBe(`removed ${id}`);
    expect(svc.get(id!)).toBeUndefined();
  });

  it("the cron tool delivers only to this chat, last, none or send_message's allowed targets", async () => {
    const { svc } = await setup({});
    const tool = createCronTool(svc, { allowedTargets: () => ["test:team"] });
    const signal = new AbortController().signal;
    const add = (deliver?: string) =>
      tool.execute(
        { action: "add", message: "ping", every: "1h", ...(deliver ? { deliver } : {}) },
        signal,
        toolCtx(),
      );
    for (const ok of [undefined, "test:owner", "last", "none", "test:team"]) await add(ok);
    expect(svc.list().map((j) => j.deliver)).toEqual(
      expect.arrayContaining(["test:owner", "test:owner", "last", "none", "test:team"]),
    );
    await expect(add("test:stranger")).rejects.toMatchObject({ code: "CRON_TARGET_NOT_ALLOWED" });
    await expect(add("telegram:999")).rejects.toThrow(/not allowed: use this chat \(test:owner\)/);
    expect(svc.list()).toHaveLength(5);
    // Without an allow-list only the chat itself, last and none are open.
    const bare = createCronTool(svc);
    await expect(
      bare.execute({ action: "add", message: "x", every: "1h", deliver: "test:team" }, signal, toolCtx()),
    ).rejects.toThrow(/allowed_targets is empty/);
  });

  it("picks up jobs another process (the CLI) wrote to the db", async () => {
    const pollClock = new FakeClock();
    const { h, svc, clock } = await setup({}, { pollClock });
    const cli = openDatabase(h.core.ctx.config().data_dir, { migrations: allMigrations });
    try {
      new CronStore(cli).putRuntimeJob(parseJobInput(job({ id: "from-cli", every: "1h" })), clock.now());
      await pollClock.advance(5000);
      expect(svc.get("from-cli")?.nextRunAt).toBe(clock.now() + HOUR);
      new CronStore(cli).deleteRuntimeJob("from-cli");
      await pollClock.advance(5000);
      expect(svc.get("from-cli")).toBeUndefined();
    } finally {
      cli.close();
    }
  });
});
