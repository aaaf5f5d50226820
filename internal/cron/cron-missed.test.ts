/**
 * Runs that did not happen at their instant: downtime, clock jumps forward and back, and a run a
 * crash interrupted (simulated here by a `running` row left in a real db file; the real kill -9 is in
 * test/faults/cron-kill.test.ts). Fake clock, real SQLite, the real agent host over the fake model.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { startHarness, until, type SchedulerHarness } from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { createCronService, type CronService } from "./cron-service.js";
import { CronStore } from "./cron-store.js";
import { openDatabase } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { join } from "node:path";

const MIN = 60_000;
const HOUR = 60 * MIN;
let fake: FakeOpenAI;
const open: { h: SchedulerHarness; svc: CronService }[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  for (const { h, svc } of open.splice(0)) {
    await svc.stop();
    h.core.close();
  }
  fake.reset();
});

async function setup(config: Record<string, unknown>, clock: FakeClock, dir?: string) {
  const h = await startHarness(fake, config, { clock, ...(dir ? { dir } : {}) });
  h.channels.setLastTarget("test:owner");
  const svc = createCronService(h.core.ctx, { host: h.host, outbox: h.channels, pollClock: new FakeClock() });
  await svc.start();
  open.push({ h, svc });
  return { h, svc };
}

async function stop(x: { h: SchedulerHarness; svc: CronService }): Promise<void> {
  await x.svc.stop();
  x.h.core.db.close();
  open.splice(open.indexOf(x), 1);
}

const idle = (svc: CronService) => until(() => svc.list().every((j) => !j.running), "cron runs to finish");

async function advance(svc: CronService, clock: FakeClock, ms: number, step = MIN): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    await clock.advance(Math.min(step, ms - done));
    await idle(svc);
  }
}

const job = (over: Record<string, unknown>) => ({ message: "ping", deliver: "test:owner", ...over });
const outcomes = (svc: CronService, id: string) =>
  svc
    .runs(id, 100)
    .reverse()
    .map((r) => [r.outcome, new Date(r.dueAt!).toISOString(), r.covers]);

describe("missed runs", () => {
  it("a reminder due while the daemon was down is delivered once after the restart, marked late", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 8));
    const cfg = { cron: { jobs: [job({ id: "mum", at: "2026-01-01T09:00", message: "call mum" })] } };
    const first = await setup(cfg, clock);
    await advance(first.svc, clock, 30 * MIN);
    await stop(first);
    // Down from 08:30 to 11:45: the 09:00 reminder falls due while nothing runs.
    clock.jump(Date.UTC(2026, 0, 1, 11, 45));
    const second = await setup(cfg, clock, first.h.core.dir);
    await idle(second.svc);
    await advance(second.svc, clock, 2 * HOUR, 10 * MIN);
    expect(second.h.channel.sent.map((m) => m.text)).toEqual([
      "(Late by 2 h 45 min: due 2026-01-01 09:00 (UTC), the daemon was not running.)\n\necho: call mum",
    ]);
    expect(second.svc.runs("mum", 10)).toEqual([
      expect.objectContaining({ trigger: "catch_up", outcome: "late", lateMs: 165 * MIN, covers: 1 }),
    ]);
    expect(second.svc.get("mum")).toMatchObject({ completed: true, nextRunAt: null });
    expect(fake.requests).toHaveLength(1);
  });

  it("a one-shot first seen after its time (added to config.yaml while down) is missed, not dropped", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
    const cfg = {
      cron: {
        jobs: [
          job({ id: "late-added", at: "2026-01-01T09:00", message: "call mum" }),
          job({ id: "quiet", at: "2026-01-01T10:00", missed: "skip" }),
        ],
      },
    };
    const { h, svc } = await setup(cfg, clock);
    await idle(svc);
    expect(outcomes(svc, "late-added")).toEqual([["late", "2026-01-01T09:00:00.000Z", 1]]);
    expect(outcomes(svc, "quiet")).toEqual([["skipped", "2026-01-01T10:00:00.000Z", 1]]);
    await until(() => h.channel.sent.length === 1, "the late reminder");
    expect(h.channel.sent[0]!.text).toMatch(/^\(Late by 3 h: due 2026-01-01 09:00 \(UTC\)/);
    expect(svc.get("quiet")).toMatchObject({ completed: true });
  });

  it("applies each policy to runs missed while down: run_once_late, skip_and_tell, skip", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 6));
    const jobs = [
      job({ id: "late", cron: "0 9 * * *", missed: "run_once_late", message: "briefing" }),
      job({ id: "tell", cron: "0 9 * * *", missed: "skip_and_tell" }),
      job({ id: "quiet", cron: "0 9 * * *", missed: "skip" }),
    ];
    const first = await setup({ cron: { jobs } }, clock);
    await stop(first);
    clock.jump(Date.UTC(2026, 0, 3, 12));
    const second = await setup({ cron: { jobs } }, clock, first.h.core.dir);
    await idle(second.svc);
    expect(outcomes(second.svc, "late")).toEqual([["late", "2026-01-01T09:00:00.000Z", 3]]);
    expect(outcomes(second.svc, "tell")).toEqual([["skipped", "2026-01-01T09:00:00.000Z", 3]]);
    expect(outcomes(second.svc, "quiet")).toEqual([["skipped", "2026-01-01T09:00:00.000Z", 3]]);
    await until(() => second.h.channel.sent.length === 2, "the late run and the notice");
    const texts = second.h.channel.sent.map((m) => m.text).sort();
    expect(texts).toEqual([
      "(Late by 2 d 3 h: due 2026-01-01 09:00 (UTC), the daemon was not running; it stands for 3 missed runs.)\n\necho: briefing",
      'Scheduled job "tell" missed 3 runs (due 2026-01-01 09:00 (UTC)) while the daemon was not running; skipped as its policy says (missed: skip_and_tell). Details: familiar cron runs tell',
    ]);
    // The next day runs on time, once each.
    await advance(second.svc, clock, 24 * HOUR, HOUR);
    for (const id of ["late", "tell", "quiet"])
      expect(outcomes(second.svc, id).at(-1)).toEqual(["on_time", "2026-01-04T09:00:00.000Z", 1]);
    expect(fake.requests).toHaveLength(4);
  });

  it("a clock jump forward and back neither doubles nor drops a run", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 8));
    const jobs = [
      job({ id: "daily", cron: "0 9 * * *", missed: "run_once_late" }),
      job({ id: "hourly", every: "1h", missed: "skip" }),
      job({ id: "mum", at: "2026-01-01T10:30", message: "call mum" }),
    ];
    const { h, svc } = await setup({ cron: { jobs } }, clock);
    await advance(svc, clock, 50 * MIN);
    // A laptop suspended at 08:50 wakes at 11:20: the wall clock jumps forward 2.5 h.
    clock.jump(Date.UTC(2026, 0, 1, 11, 20));
    await advance(svc, clock, 5 * MIN);
    expect(outcomes(svc, "daily")).toEqual([["late", "2026-01-01T09:00:00.000Z", 1]]);
    expect(outcomes(svc, "hourly")).toEqual([["skipped", "2026-01-01T09:00:00.000Z", 3]]);
    expect(outcomes(svc, "mum")).toEqual([["late", "2026-01-01T10:30:00.000Z", 1]]);
    expect(h.channel.sent.map((m) => m.text)).toContainEqual(
      "(Late by 50 min: due 2026-01-01 10:30 (UTC), the clock jumped forward.)\n\necho: call mum",
    );
    // An NTP step puts the clock back 2 h, to 09:25: nothing that already ran runs again.
    clock.jump(Date.UTC(2026, 0, 1, 9, 25));
    await advance(svc, clock, 4 * HOUR, 5 * MIN);
    expect(outcomes(svc, "daily")).toEqual([["late", "2026-01-01T09:00:00.000Z", 1]]);
    expect(outcomes(svc, "mum")).toHaveLength(1);
    // The hourly job resumes at its next instant after the last one handled (11:00): 12:00, 13:00.
    expect(outcomes(svc, "hourly")).toEqual([
      ["skipped", "2026-01-01T09:00:00.000Z", 3],
      ["on_time", "2026-01-01T12:00:00.000Z", 1],
      ["on_time", "2026-01-01T13:00:00.000Z", 1],
    ]);
    // Every instant from 09:00 to 13:00 is accounted for exactly once.
    expect(svc.runs("hourly", 100).reduce((n, r) => n + r.covers, 0)).toBe(5);
  });

  it("resumes a run a crash interrupted once, and a resumed run that is interrupted again not at all", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 8));
    const cfg = { cron: { jobs: [job({ id: "mum", at: "2026-01-01T09:00", message: "call mum" })] } };
    const first = await setup(cfg, clock);
    await stop(first);
    const dir = first.h.core.dir;
    // What a daemon killed at 09:00:05, mid-run, leaves behind: the run row still `running` and the
    // instant marked handled (the real kill -9 is in test/faults/cron-kill.test.ts).
    const raw = openDatabase(join(dir, "data"), { migrations: allMigrations });
    const store = new CronStore(raw);
    const due = Date.UTC(2026, 0, 1, 9);
    store.startRun({
      jobId: "mum",
      trigger: "schedule",
      dueAt: due,
      startedAt: due + 5000,
      status: "running",
      sessionKey: "cron:mum",
    });
    store.putState({ ...store.state("mum")!, lastDueAt: due, lastRunAt: due + 5000 });
    raw.close();

    clock.jump(Date.UTC(2026, 0, 1, 9, 10));
    const second = await setup(cfg, clock, dir);
    await idle(second.svc);
    expect(second.svc.runs("mum", 10).map((r) => [r.trigger, r.outcome, r.resumeOf])).toEqual([
      ["resume", "late", second.svc.runs("mum", 10)[1]!.id],
      ["schedule", "interrupted", null],
    ]);
    expect(second.h.channel.sent.map((m) => m.text)).toEqual([
      "(Late by 10 min: due 2026-01-01 09:00 (UTC), a restart interrupted its first run.)\n\necho: call mum",
    ]);
    await stop(second);
    const third = await setup(cfg, clock, dir);
    await idle(third.svc);
    expect(third.svc.runs("mum", 10)).toHaveLength(2);
    expect(fake.requests).toHaveLength(1);
  });
});
