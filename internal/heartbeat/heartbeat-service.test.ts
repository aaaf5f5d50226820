import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { startHarness, until, type SchedulerHarness } from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { ChannelRegistry } from "../channels/registry.js";
import { kvLastTargetStore } from "../channels/last-target-store.js";
import { createHeartbeatService, type HeartbeatService } from "./heartbeat-service.js";
import { hasHeartbeatTasks, isHeartbeatOk } from "./heartbeat-file.js";
import { withinActiveHours } from "./active-hours.js";

const MIN = 60_000;
let fake: FakeOpenAI;
let h: SchedulerHarness | undefined;
let svc: HeartbeatService | undefined;

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
  h?.core.close();
  h = undefined;
  fake.reset();
});

async function setup(heartbeat: Record<string, unknown>, heartbeatMd?: string, clock?: FakeClock) {
  h = await startHarness(fake, { heartbeat }, clock ? { clock } : {});
  if (heartbeatMd !== undefined)
    writeFileSync(join(h.core.ctx.config().workspace, "HEARTBEAT.md"), heartbeatMd);
  svc = createHeartbeatService(h.core.ctx, { host: h.host, outbox: h.channels });
  await svc.start();
  return { h, svc };
}

/** Advances one tick and waits until it has been recorded as finished. */
async function tick(s: HeartbeatService, clock: FakeClock, ms: number): Promise<void> {
  const before = s.recentRuns(1)[0]?.id ?? 0;
  await clock.advance(ms);
  await until(() => {
    const r = s.recentRuns(1)[0];
    return r !== undefined && r.id > before && r.endedAt !== null;
  }, "heartbeat run");
}

describe("HEARTBEAT.md and reply rules", () => {
  it("finds tasks only outside headings, comments and blank lines", () => {
    expect(hasHeartbeatTasks("")).toBe(false);
    expect(hasHeartbeatTasks("# Heartbeat\n\n## Daily\n<!-- add tasks here\n- like this -->\n\n")).toBe(
      false,
    );
    expect(hasHeartbeatTasks("# Heartbeat\n- check the inbox\n")).toBe(true);
    expect(hasHeartbeatTasks("<!-- a --> check mail")).toBe(true);
    expect(hasHeartbeatTasks("#hashtag is text, not a heading")).toBe(true);
  });

  it("treats HEARTBEAT_OK plus at most 300 characters as an acknowledgement", () => {
    expect(isHeartbeatOk("HEARTBEAT_OK")).toBe(true);
    expect(isHeartbeatOk("**HEARTBEAT_OK** nothing to report")).toBe(true);
    expect(isHeartbeatOk(`HEARTBEAT_OK ${"x".repeat(300)}`)).toBe(true);
    expect(isHeartbeatOk(`HEARTBEAT_OK ${"x".repeat(301)}`)).toBe(false);
    expect(isHeartbeatOk("Your flight leaves in 2 hours. HEARTBEAT_OK")).toBe(false);
  });

  it("active hours span midnight and follow the time zone", () => {
    const night = { start: "22:00", end: "06:00", timezone: "America/New_York" };
    // 03:30 UTC = 23:30 in New York (EDT, UTC-4) on 2026-07-01
    expect(withinActiveHours(Date.UTC(2026, 6, 1, 3, 30), night, "UTC")).toBe(true);
    // 12:00 UTC = 08:00 in New York
    expect(withinActiveHours(Date.UTC(2026, 6, 1, 12, 0), night, "UTC")).toBe(false);
    // 09:59 UTC = 05:59 in New York, 10:00 UTC = 06:00 (end is exclusive)
    expect(withinActiveHours(Date.UTC(2026, 6, 1, 9, 59), night, "UTC")).toBe(true);
    expect(withinActiveHours(Date.UTC(2026, 6, 1, 10, 0), night, "UTC")).toBe(false);
    const day = { start: "09:00", end: "17:00" };
    expect(withinActiveHours(Date.UTC(2026, 0, 1, 8, 30), day, "Europe/Berlin")).toBe(true); // 09:30 CET
    expect(withinActiveHours(Date.UTC(2026, 0, 1, 8, 30), day, "UTC")).toBe(false);
  });
});

describe("heartbeat service", () => {
  it.each([
    ["missing", undefined, "HEARTBEAT.md is missing"],
    ["empty", "  \n\n", "HEARTBEAT.md is empty"],
    ["headings-only", "# Heartbeat\n\n## Checks\n<!-- nothing yet -->\n", "only headings"],
  ])("skips with zero model calls when HEARTBEAT.md is %s", async (_name, md, reason) => {
    const { h, svc } = await setup({ every: "30m", target: "test:owner" }, md);
    for (let i = 0; i < 3; i++) await tick(svc, h.clock, 30 * MIN);
    const runs = svc.recentRuns();
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.status === "skipped" && r.reason?.includes(reason))).toBe(true);
    expect(fake.requests).toHaveLength(0);
    expect(h.channel.sent).toHaveLength(0);
  });

  it("suppresses HEARTBEAT_OK and runs in the light context with the heartbeat model", async () => {
    const { h, svc } = await setup(
      { every: "30m", target: "test:owner", model: "fake/cheap" },
      "# Heartbeat\n- check the calendar for today\n",
    );
    fake.enqueue({ text: "HEARTBEAT_OK nothing due" });
    await tick(svc, h.clock, 30 * MIN);
    const run = svc.recentRuns(1)[0]!;
    expect(run).toMatchObject({ status: "ran", delivered: false });
    expect(run.reason).toContain("HEARTBEAT_OK");
    expect(run.tokens).toBeGreaterThan(0);
    expect(h.channel.sent).toHaveLength(0);
    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.model).toBe("cheap");
    const system = JSON.stringify(req.body?.messages?.[0]);
    expect(system).toContain("check the calendar for today");
  });

  it("delivers any other reply to the target, and to the last target with target: last", async () => {
    const { h, svc } = await setup({ every: "30m", target: "last" }, "- remind me about the dentist\n");
    // No last target yet: ran but nothing delivered, and that is recorded.
    fake.enqueue({ text: "Dentist at 15:00 today." });
    await tick(svc, h.clock, 30 * MIN);
    expect(svc.recentRuns(1)[0]).toMatchObject({ status: "ran", delivered: false });
    expect(svc.recentRuns(1)[0]!.reason).toContain("no last channel target");
    h.channels.setLastTarget("test:owner-chat");
    fake.enqueue({ text: "Dentist at 15:00 today." });
    await tick(svc, h.clock, 30 * MIN);
    expect(svc.recentRuns(1)[0]).toMatchObject({ status: "ran", delivered: true, target: "test:owner-chat" });
    expect(h.channel.sent.map((m) => [m.target, m.text])).toEqual([
      ["owner-chat", "Dentist at 15:00 today."],
    ]);
    // A long reply that merely starts with the marker is delivered.
    const long = `HEARTBEAT_OK but also: ${"details ".repeat(60)}`;
    fake.enqueue({ text: long });
    await tick(svc, h.clock, 30 * MIN);
    expect(h.channel.sent.at(-1)?.text).toBe(long);
  });

  it("target: last still reaches the owner after a restart (the last target is kept in the store)", async () => {
    const { h, svc: first } = await setup({ every: "30m", target: "last" }, "- water the plants\n");
    h.channels.setLastTarget("test:owner-chat");
    await first.stop();
    // A restart: a fresh registry over the same database, with the channel registered again.
    const channels = new ChannelRegistry(kvLastTargetStore(h.core.ctx.db));
    channels.add(h.channel);
    expect(channels.lastTarget()).toBe("test:owner-chat");
    svc = createHeartbeatService(h.core.ctx, { host: h.host, outbox: channels });
    await svc.start();
    fake.enqueue({ text: "The plants need water." });
    await tick(svc, h.clock, 30 * MIN);
    expect(svc.recentRuns(1)[0]).toMatchObject({ status: "ran", delivered: true, target: "test:owner-chat" });
    expect(h.channel.sent.map((m) => [m.target, m.text])).toEqual([["owner-chat", "The plants need water."]]);
  });

  it("runs only inside active hours across midnight in the configured time zone", async () => {
    // 2026-07-01 00:00 UTC = 2026-06-30 20:00 in New York.
    const clock = new FakeClock(Date.UTC(2026, 6, 1, 0, 0));
    const { svc } = await setup(
      {
        every: "1h",
        target: "none",
        active_hours: { start: "22:00", end: "06:00", timezone: "America/New_York" },
      },
      "- check the server\n",
      clock,
    );
    // The 21:00 tick (New York) is outside the window: status names 22:00 New York (02:00 UTC) as next.
    expect(svc.nextRunAt()).toBe(Date.UTC(2026, 6, 1, 1, 0));
    expect(svc.status().nextRunAt).toBe(Date.UTC(2026, 6, 1, 2, 0));
    for (let i = 0; i < 24; i++) await tick(svc, clock, 60 * MIN);
    const runs = svc.recentRuns(24).reverse();
    const ranHoursNy = runs
      .filter((r) => r.status === "ran")
      .map((r) => (new Date(r.at).getUTCHours() + 20) % 24);
    expect(ranHoursNy).toEqual([22, 23, 0, 1, 2, 3, 4, 5]);
    expect(fake.requests).toHaveLength(8);
    expect(runs.filter((r) => r.status === "skipped").every((r) => r.reason === "outside active hours")).toBe(
      true,
    );
  });

  it("never overlaps runs, and a failed run does not stop the schedule", async () => {
    const { h, svc } = await setup({ every: "10m", target: "test:owner" }, "- watch the build\n");
    fake.enqueue({ hang: true });
    await h.clock.advance(10 * MIN);
    await until(() => fake.requests.length === 1, "first model call");
    await tick(svc, h.clock, 10 * MIN);
    expect(svc.recentRuns(1)[0]).toMatchObject({
      status: "skipped",
      reason: "the previous run is still running",
    });
    expect(fake.requests).toHaveLength(1);
    expect(h.host.abort("heartbeat")).toBe(true);
    await until(() => svc.recentRuns(2).some((r) => r.status === "error"), "aborted run recorded");
    fake.enqueue({ error: { status: 500 } });
    await tick(svc, h.clock, 10 * MIN);
    expect(svc.recentRuns(1)[0]?.status).toBe("error");
    fake.enqueue({ text: "The build is red." });
    await tick(svc, h.clock, 10 * MIN);
    expect(svc.recentRuns(1)[0]).toMatchObject({ status: "ran", delivered: true });
    expect(h.channel.sent.map((m) => m.text)).toEqual(["The build is red."]);
    expect(fake.requests).toHaveLength(3);
  });

  it("is off with every: 0 and follows a hot reload", async () => {
    const { h, svc } = await setup({ every: 0 }, "- something\n");
    expect(svc.nextRunAt()).toBeUndefined();
    expect(svc.health().state).toBe("disabled");
    h.core.setConfig({ models: { ...fakeModelsOf(h) }, heartbeat: { every: "15m", target: "none" } });
    expect(svc.nextRunAt()).toBe(h.clock.now() + 15 * MIN);
    expect(svc.status()).toMatchObject({ state: "ok", nextRunAt: h.clock.now() + 15 * MIN });
  });
});

function fakeModelsOf(h: SchedulerHarness): Record<string, unknown> {
  const m = h.core.ctx.config().models;
  return { providers: m.providers, primary: m.primary, max_retries: 0, timeout_s: 10 };
}
