import { afterEach, describe, expect, it, vi } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { openDatabase } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { flushTraces, TRACE_FLUSH_MS, TraceRecorder } from "./trace.js";

let core: TestCore | undefined;
afterEach(() => {
  vi.useRealTimers();
  core?.close();
  core = undefined;
});

const turn = (requestId: string) => ({
  requestId,
  parentRequestId: null,
  rootRequestId: requestId,
  depth: 0,
  kind: "turn" as const,
  name: "main",
  sessionId: "s1",
  agentId: "main",
});

function stored(c: TestCore): { id: number; kind: string; status: string; ended_at: number | null }[] {
  return c.db
    .prepare<[], { id: number; kind: string; status: string; ended_at: number | null }>(
      "SELECT id, kind, status, ended_at FROM traces ORDER BY id",
    )
    .all();
}

describe("trace rows are written behind, in batches", () => {
  it("a turn's rows wait for one commit, yet every read through a recorder sees them", () => {
    vi.useFakeTimers();
    core = createTestCore();
    const rec = new TraceRecorder(core.db, () => 1000);
    const id = rec.start(turn("r1"));
    const tool = rec.start({ ...turn("r1"), kind: "tool", name: "read_file" });
    rec.end(tool, "ok");
    rec.point({
      requestId: "r1",
      rootRequestId: "r1",
      depth: 0,
      kind: "model",
      name: "a/m",
      meta: { input: 3 },
    });
    rec.endRequest("r1", "ok");
    expect(stored(core)).toEqual([]);
    // Another recorder on the same database (the /api/traces route) flushes before it reads.
    const tree = new TraceRecorder(core.db, () => 0).tree("r1");
    expect(tree.map((r) => [r.id, r.kind, r.status])).toEqual([
      [id, "turn", "ok"],
      [tool, "tool", "ok"],
      [tool + 1, "model", "ok"],
    ]);
    expect(stored(core)).toHaveLength(3);
  });

  it("commits on its own within TRACE_FLUSH_MS, and ids keep growing across recorders and restarts", () => {
    vi.useFakeTimers();
    core = createTestCore();
    const rec = new TraceRecorder(core.db, () => 5);
    const first = rec.start(turn("r2"));
    vi.advanceTimersByTime(TRACE_FLUSH_MS - 1);
    expect(stored(core)).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(stored(core)).toEqual([{ id: first, kind: "turn", status: "running", ended_at: null }]);
    rec.endRequest("r2", "error");
    flushTraces(core.db);
    expect(stored(core)[0]).toMatchObject({ status: "error", ended_at: 5 });
    // A second connection (the daemon after a restart) continues past the ids already used.
    const again = openDatabase(core.ctx.config().data_dir, { migrations: allMigrations });
    try {
      const next = new TraceRecorder(again, () => 6).start(turn("r3"));
      expect(next).toBeGreaterThan(first);
      flushTraces(again);
    } finally {
      again.close();
    }
    expect(stored(core).map((r) => r.id)).toEqual([first, first + 1]);
  });

  it("rows flushed inside a caller's transaction commit or roll back with it", () => {
    core = createTestCore();
    const db = core.db;
    const rec = new TraceRecorder(db, () => 1);
    rec.start(turn("r4"));
    expect(() =>
      db.transaction(() => {
        rec.flush();
        throw new Error("the model call's commit failed");
      })(),
    ).toThrow("the model call's commit failed");
    expect(stored(core)).toEqual([]);
    rec.start(turn("r5"));
    db.transaction(() => rec.flush())();
    expect(stored(core).map((r) => r.kind)).toEqual(["turn"]);
  });

  it("a failed write is reported, dropped and never thrown at the turn", () => {
    core = createTestCore();
    const errors: string[] = [];
    const rec = new TraceRecorder(
      core.db,
      () => 1,
      (err) => errors.push(err.message),
    );
    rec.start(turn("r6"));
    core.db.close();
    expect(() => rec.flush()).not.toThrow();
    expect(errors).toHaveLength(1);
  });
});
