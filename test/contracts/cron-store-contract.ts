/**
 * The ONE contract suite for the cron store (internal/cron/cron-store.ts), shared by the daemon's cron
 * service and the `familiar cron` CLI, which may write the same file from another process. What they
 * rely on: runtime jobs, schedule state and run history survive a restart; a stored job that no longer
 * validates is reported, never silently dropped; runs come back newest first and history is bounded;
 * a run left `running` by a daemon that died is marked interrupted; a commit by another connection moves
 * `dataVersion()` (how the daemon notices a CLI edit) and the daemon's own writes do not.
 *
 * Usage (inside a vitest file): `runCronStoreContract("sqlite", factory)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { CronState, CronStore } from "../../internal/cron/cron-store.js";
import { RUNS_KEPT_PER_JOB } from "../../internal/cron/cron-store.js";
import { parseJobInput } from "../../internal/cron/job.js";

/** What the suite needs to drive one cron store on a real SQLite file. */
export interface CronStoreHarness {
  store: CronStore;
  /** Closes the database and builds the store again on the same file (a daemon restart). */
  restart(): CronStore;
  /** A store on another connection to the same file (the CLI while the daemon runs). */
  other(): CronStore;
  /** Writes a raw job row, as an older version or a hand edit might have left it. */
  putRawJob(id: string, spec: string): void;
  cleanup(): void;
}

const job = (id: string, extra: Record<string, unknown> = {}): ReturnType<typeof parseJobInput> =>
  parseJobInput({ id, every: "1h", message: `run ${id}`, ...extra });

const state = (jobId: string, extra: Partial<CronState> = {}): CronState => ({
  jobId,
  scheduleKey: "every:1h",
  anchorAt: 1_000,
  lastDueAt: null,
  lastRunAt: null,
  lastEndAt: null,
  lastStatus: null,
  lastError: null,
  failures: 0,
  completedAt: null,
  ...extra,
});

/** Starts a scheduled run of job `j` due at `dueAt` (started a moment later). */
const startScheduled = (store: CronStore, dueAt: number, sessionKey: string | null = null): number =>
  store.startRun({
    jobId: "j",
    trigger: "schedule",
    dueAt,
    startedAt: dueAt + 1,
    status: "running",
    sessionKey,
  });

/** Registers the contract tests for one implementation. */
export function runCronStoreContract(name: string, factory: () => CronStoreHarness): void {
  describe(`cron store contract: ${name}`, () => {
    let h: CronStoreHarness | undefined;
    const make = (): CronStoreHarness => (h = factory());
    afterEach(() => {
      h?.cleanup();
      h = undefined;
    });

    it("keeps runtime jobs in creation order across a restart, and deletes them", () => {
      const x = make();
      x.store.putRuntimeJob(job("b-first"), 1);
      x.store.putRuntimeJob(job("a-second", { deliver: "last" }), 2);
      x.store.putRuntimeJob(job("b-first", { message: "edited" }), 3);
      const after = x.restart();
      expect(after.runtimeJobs().jobs.map((j) => [j.id, j.message])).toEqual([
        ["b-first", "edited"],
        ["a-second", "run a-second"],
      ]);
      expect(after.runtimeJob("a-second")?.deliver).toBe("last");
      expect(after.deleteRuntimeJob("a-second")).toBe(true);
      expect(after.deleteRuntimeJob("a-second")).toBe(false);
      expect(x.restart().runtimeJob("a-second")).toBeUndefined();
    });

    it("reports a stored job that no longer validates instead of dropping it", () => {
      const x = make();
      x.store.putRuntimeJob(job("good"), 1);
      x.putRawJob("broken", JSON.stringify({ id: "broken", message: "no schedule" }));
      x.putRawJob("garbled", "{not json");
      const { jobs, invalid } = x.store.runtimeJobs();
      expect(jobs.map((j) => j.id)).toEqual(["good"]);
      expect(invalid.map((i) => i.id).sort()).toEqual(["broken", "garbled"]);
      for (const i of invalid) expect(i.error).toMatch(/\S/);
      expect(x.store.runtimeJob("broken")).toBeUndefined();
    });

    it("keeps schedule state across a restart; deleting a job forgets its state", () => {
      const x = make();
      x.store.putState(state("j", { lastDueAt: 5_000, lastStatus: "error", lastError: "boom", failures: 2 }));
      x.store.putState(state("j", { lastDueAt: 6_000, lastStatus: "error", lastError: "boom", failures: 3 }));
      x.store.putRuntimeJob(job("j"), 1);
      const after = x.restart();
      expect(after.state("j")).toEqual(
        state("j", { lastDueAt: 6_000, lastStatus: "error", lastError: "boom", failures: 3 }),
      );
      after.deleteRuntimeJob("j");
      expect(after.state("j")).toBeUndefined();
    });

    it("records runs newest first, finished or skipped, and keeps them across a restart", () => {
      const x = make();
      const a = startScheduled(x.store, 10, "cron:j");
      x.store.finishRun(a, "j", {
        endedAt: 20,
        status: "ok",
        error: null,
        tokens: 42,
        preview: "done",
        delivered: true,
      });
      const b = x.store.startRun({
        jobId: "j",
        trigger: "manual",
        dueAt: null,
        startedAt: 30,
        status: "skipped",
        error: "disabled",
        sessionKey: null,
      });
      const after = x.restart();
      expect(after.runs("j").map((r) => r.id)).toEqual([b, a]);
      expect(after.run(a)).toMatchObject({
        status: "ok",
        endedAt: 20,
        tokens: 42,
        outputPreview: "done",
        delivered: true,
      });
      expect(after.run(b)).toMatchObject({
        status: "skipped",
        endedAt: 30,
        error: "disabled",
        trigger: "manual",
      });
      expect(after.runs("other")).toEqual([]);
    });

    it(`keeps at most ${RUNS_KEPT_PER_JOB} runs per job`, () => {
      const { store } = make();
      let last = 0;
      for (let i = 0; i < RUNS_KEPT_PER_JOB + 5; i++) {
        last = startScheduled(store, i);
        store.finishRun(last, "j", {
          endedAt: i,
          status: "ok",
          error: null,
          tokens: 0,
          preview: null,
          delivered: false,
        });
      }
      const runs = store.runs("j", 1_000);
      expect(runs).toHaveLength(RUNS_KEPT_PER_JOB);
      expect(runs[0]!.id).toBe(last);
    });

    it("marks a run left running by a dead daemon as interrupted at the next start", () => {
      const x = make();
      const id = startScheduled(x.store, 1);
      const after = x.restart();
      expect(after.markInterrupted(99).map((r) => r.id)).toEqual([id]);
      expect(after.run(id)).toMatchObject({
        status: "interrupted",
        outcome: "interrupted",
        endedAt: 99,
        error: expect.stringMatching(/interrupted/),
      });
      expect(after.markInterrupted(100)).toEqual([]);
      expect(after.wasResumed(id)).toBe(false);
    });

    it("moves dataVersion when another connection commits, not for its own writes", () => {
      const x = make();
      const v0 = x.store.dataVersion();
      x.store.putRuntimeJob(job("own"), 1);
      expect(x.store.dataVersion()).toBe(v0);
      const cli = x.other();
      cli.putRuntimeJob(job("from-cli"), 2);
      expect(x.store.dataVersion()).not.toBe(v0);
      expect(x.store.runtimeJob("from-cli")?.message).toBe("run from-cli");
    });
  });
}
