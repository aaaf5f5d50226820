/**
 * The scheduler over the websocket: cron.list / cron.run, config.reload adding a job, and the `cron`,
 * `heartbeat` and `config.reloaded` events with a per-connection `seq` that counts up from 1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { GatewayClient } from "../../internal/gateway/client.js";
import { harnessConfig, startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "ws-scheduler-token-123";
const JOBS = [{ id: "daily", cron: "0 9 * * *", message: "morning check", deliver: "none" }];
let h: GatewayHarness;
let c: GatewayClient;
const seen: { event: string; payload: Record<string, unknown>; seq: number }[] = [];

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { cron: { jobs: JOBS }, heartbeat: { every: "30m", target: "none" } },
  });
  c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "ws-scheduler" });
  c.on("*", (p, seq) => {
    const f = p as { event: string; payload: Record<string, unknown> };
    seen.push({ ...f, seq });
  });
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});

interface JobView {
  id: string;
  source: string;
  schedule: string;
  nextRunAt: number | null;
  lastStatus: string | null;
}

describe("scheduler methods and events over the websocket", () => {
  it("cron.list shows config jobs; cron.run runs one now, records it and emits cron events", async () => {
    const { jobs } = await c.request<{ jobs: JobView[] }>("cron.list");
    expect(jobs).toEqual([
      expect.objectContaining({ id: "daily", source: "config", schedule: "cron 0 9 * * * (UTC)" }),
    ]);
    expect(jobs[0]?.nextRunAt).toBeGreaterThan(Date.now());

    h.fake.enqueue({ text: "all fine this morning" });
    const r = await c.request<{ jobId: string; result: Record<string, unknown> }>("cron.run", {
      id: "daily",
    });
    expect(r.jobId).toBe("daily");
    expect(r.result).toMatchObject({
      jobId: "daily",
      trigger: "manual",
      status: "ok",
      outputPreview: "all fine this morning",
      sessionKey: "cron:daily",
      delivered: false,
    });
    expect(r.result.tokens).toBeGreaterThan(0);
    const cronEvents = await waitFor(() => {
      const evs = seen.filter((e) => e.event === "cron" && e.payload.jobId === "daily");
      return evs.length >= 2 && evs;
    });
    expect(cronEvents.map((e) => e.payload.status)).toEqual(["started", "ok"]);
    const after = await c.request<{ jobs: JobView[] }>("cron.list");
    expect(after.jobs[0]?.lastStatus).toBe("ok");
  });

  it("cron.run of an unknown job is not_found, and a missing id is invalid_params", async () => {
    await expect(c.request("cron.run", { id: "nope" })).rejects.toMatchObject({ code: "not_found" });
    await expect(c.request("cron.run", {})).rejects.toMatchObject({ code: "invalid_params" });
  });

  it("config.reload picks up a new config job without a restart and sends config.reloaded", async () => {
    const cfg = harnessConfig(h.dir, h.port, h.fake.baseUrl, {
      gateway: { token: TOKEN },
      config: {
        cron: { jobs: [...JOBS, { id: "walk", every: "2h", message: "stretch", deliver: "none" }] },
        heartbeat: { every: "30m", target: "none" },
      },
    });
    writeFileSync(h.configPath, JSON.stringify(cfg, null, 2));
    const r = await c.request<{ changed: string[] }>("config.reload");
    expect(r.changed).toContain("cron");
    await waitFor(() => seen.find((e) => e.event === "config.reloaded"));
    const { jobs } = await c.request<{ jobs: JobView[] }>("cron.list");
    expect(jobs.map((j) => [j.id, j.schedule])).toEqual([
      ["daily", "cron 0 9 * * * (UTC)"],
      ["walk", "every 2h"],
    ]);
  });

  it("cron.add creates a persisted runtime job; cron.runs and cron.remove manage it; bad input is refused", async () => {
    const added = await c.request<{ job: JobView }>("cron.add", {
      job: { id: "tea", every: "45m", message: "make tea", deliver: "none" },
    });
    expect(added.job).toMatchObject({ id: "tea", source: "runtime", schedule: "every 45m" });
    expect(added.job.nextRunAt).toBeGreaterThan(Date.now());
    const stored = h.daemon.db.prepare("SELECT id FROM cron_jobs WHERE id = ?").get("tea");
    expect(stored).toEqual({ id: "tea" });

    h.fake.enqueue({ text: "tea is ready" });
    await c.request("cron.run", { id: "tea" });
    const runs = await c.request<{ runs: { status: string; outputPreview: string }[] }>("cron.runs", {
      id: "tea",
    });
    expect(runs.runs).toEqual([expect.objectContaining({ status: "ok", outputPreview: "tea is ready" })]);

    await expect(
      c.request("cron.add", { job: { id: "tea", every: "1h", message: "again" } }),
    ).rejects.toMatchObject({ code: "conflict" });
    await expect(
      c.request("cron.add", { job: { id: "bad", cron: "61 * * * *", message: "x" } }),
    ).rejects.toMatchObject({ code: "invalid_params", message: expect.stringContaining("cron") });
    await expect(c.request("cron.add", {})).rejects.toMatchObject({ code: "invalid_params" });
    await expect(c.request("cron.remove", { id: "daily" })).rejects.toMatchObject({ code: "forbidden" });

    expect(await c.request("cron.remove", { id: "tea" })).toEqual({ jobId: "tea", removed: true });
    const { jobs } = await c.request<{ jobs: JobView[] }>("cron.list");
    expect(jobs.map((j) => j.id)).not.toContain("tea");
    await expect(c.request("cron.remove", { id: "tea" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("a heartbeat run is broadcast as heartbeat events", async () => {
    writeFileSync(join(h.dir, "workspace", "HEARTBEAT.md"), "# Checks\n- look at the calendar\n");
    const hb = h.daemon.parts.heartbeat;
    h.fake.enqueue({ text: "HEARTBEAT_OK" });
    const run = await hb.runNow();
    expect(run.status).toBe("ran");
    const evs = await waitFor(() => {
      const e = seen.filter((x) => x.event === "heartbeat");
      return e.length >= 2 && e;
    });
    expect(evs.map((e) => e.payload.status)).toEqual(["started", "ok"]);
  });

  it("every event this connection got carries seq 1, 2, 3... in order", () => {
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
  });
});
