import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { addJob, formatList, formatRuns, jobRuns, listJobs, removeJob } from "./cron.js";
import { openDatabase } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { CronStore } from "../cron/cron-store.js";

const run = promisify(execFile);
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function configFile(): string {
  dir = mkdtempSync(join(tmpdir(), "familiar-cron-cli-"));
  const file = join(dir, "config.yaml");
  writeFileSync(
    file,
    [
      "data_dir: ./data",
      "timezone: Europe/Berlin",
      "log: { level: silent }",
      "cron:",
      "  jobs:",
      "    - id: morning",
      '      cron: "0 9 * * *"',
      "      message: good morning",
      "",
    ].join("\n"),
  );
  return file;
}

describe("familiar cron add --at from now (issue 47)", () => {
  it('2m, +2m and "in 2 hours" are fixed to an instant when added', async () => {
    const file = configFile();
    openDatabase(join(dir!, "data"), { migrations: allMigrations }).close();
    const now = Date.UTC(2026, 0, 1, 12);
    for (const [id, at, want] of [
      ["a", "2m", "2026-01-01T12:02:00.000Z"],
      ["b", "+2m", "2026-01-01T12:02:00.000Z"],
      ["c", "in 2 hours", "2026-01-01T14:00:00.000Z"],
      ["d", "in 1 hour and 30 minutes", "2026-01-01T13:30:00.000Z"],
    ] as const) {
      const job = await addJob(file, { id, message: "m", deliver: "none", at }, now);
      expect(job.at).toBe(want);
    }
    await expect(
      addJob(file, { id: "e", message: "m", deliver: "none", at: "in a while" }, now),
    ).rejects.toThrow(/a time from now such as 2m, \+2m or "in 2 hours"/);
  });
});

describe("familiar cron (store side)", () => {
  it("adds, lists, shows runs and removes runtime jobs; config jobs are protected", async () => {
    const cfg = configFile();
    const now = Date.UTC(2026, 2, 28, 12);
    await addJob(cfg, { id: "tea", every: "2h", message: "tea", deliver: "none" }, now);
    await expect(addJob(cfg, { id: "tea", every: "1h", message: "x" }, now)).rejects.toThrow(
      /already exists/,
    );
    await expect(addJob(cfg, { id: "morning", every: "1h", message: "x" }, now)).rejects.toThrow(
      /already exists/,
    );
    await expect(addJob(cfg, { id: "bad", cron: "0 9 * *", message: "x" }, now)).rejects.toThrow(
      /invalid cron job: cron: invalid cron expression/,
    );
    const rows = await listJobs(cfg, now);
    expect(rows.map((r) => [r.id, r.source, r.schedule])).toEqual([
      ["morning", "config", "cron 0 9 * * * (Europe/Berlin)"],
      ["tea", "runtime", "every 2h"],
    ]);
    // 09:00 Berlin on 2026-03-29 is 07:00 UTC (CEST)
    expect(rows[0]?.nextRunAt).toBe(Date.UTC(2026, 2, 29, 7));
    expect(formatList(rows)).toContain("tea [runtime] every 2h");

    const db = openDatabase(join(dir!, "data"), { migrations: allMigrations });
    const store = new CronStore(db);
    const id = store.startRun({
      jobId: "tea",
      trigger: "schedule",
      dueAt: now,
      startedAt: now,
      status: "running",
      sessionKey: "cron:tea",
    });
    store.finishRun(id, "tea", {
      endedAt: now + 1500,
      status: "ok",
      error: null,
      tokens: 42,
      preview: "Tea is ready",
      delivered: true,
    });
    db.close();
    const runs = await jobRuns(cfg, "tea");
    expect(runs).toMatchObject([
      { status: "ok", tokens: 42, delivered: true, outputPreview: "Tea is ready" },
    ]);
    expect(formatRuns(runs)).toMatch(/schedule\s+ok\s+1\.5s 42 tok delivered {2}Tea is ready/);

    await expect(removeJob(cfg, "morning")).rejects.toThrow(/config.yaml/);
    await removeJob(cfg, "tea");
    await expect(removeJob(cfg, "tea")).rejects.toThrow(/no cron job/);
    expect((await listJobs(cfg, now)).map((r) => r.id)).toEqual(["morning"]);
  });

  it("works as a real command line", { timeout: 60_000 }, async () => {
    const cfg = configFile();
    const cli = ["--import", "tsx", join(process.cwd(), "cmd/familiar.ts")];
    const add = await run(process.execPath, [
      ...cli,
      "cron",
      "add",
      "walk",
      "-m",
      "go for a walk",
      "--every",
      "3h",
      "-c",
      cfg,
    ]);
    expect(add.stdout).toContain("added walk");
    const list = await run(process.execPath, [...cli, "cron", "list", "--json", "-c", cfg]);
    const rows = JSON.parse(list.stdout) as { id: string; schedule: string }[];
    expect(rows.map((r) => [r.id, r.schedule])).toEqual([
      ["morning", "cron 0 9 * * * (Europe/Berlin)"],
      ["walk", "every 3h"],
    ]);
    const bad = await run(process.execPath, [
      ...cli,
      "cron",
      "add",
      "x",
      "-m",
      "x",
      "--at",
      "soon",
      "-c",
      cfg,
    ]).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(bad?.code).toBe(1);
    expect(bad?.stderr).toContain("at: expected an ISO time");
    // A job that does not exist is named, with the ones that do, and the exit code says so.
    const unknown = await run(process.execPath, [...cli, "cron", "runs", "wlak", "-c", cfg]).then(
      () => undefined,
      (err: { code: number; stderr: string; stdout: string }) => err,
    );
    expect(unknown).toMatchObject({
      code: 1,
      stdout: "",
      stderr: 'familiar cron: no cron job "wlak" (jobs: morning, walk; see familiar cron list)\n',
    });
    const none = await run(process.execPath, [...cli, "cron", "runs", "walk", "-c", cfg]);
    expect(none.stdout).toBe("no runs\n");
  });
});
