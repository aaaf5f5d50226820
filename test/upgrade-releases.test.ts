/**
 * Issue 46, item 8: upgrades cannot brick an install. `test/fixtures/releases/<commit>.db` is the
 * database each earlier release left behind (one per schema state on main, written by that release's
 * own code with make-release-db.sh: a session with a question and an answer, a runtime cron job, a
 * usage row). Each opens with this build: every row is still there, the schema is up to date, and a
 * copy of the database as the release left it lies beside it. The real daemon starts on the oldest;
 * and a database a newer build wrote is refused by `familiar run` in one line naming that copy.
 */
import Database from "better-sqlite3";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { allMigrations } from "../internal/daemon/migrations.js";
import { openDatabase } from "../internal/store/db.js";
import { knownVersions, schemaLevel, storedVersions } from "../internal/store/upgrade-guard.js";
import { SessionStore } from "../internal/session/session-store.js";
import { CronStore } from "../internal/cron/cron-store.js";
import { cleanupDaemons, REPO_ROOT, startDaemonProcess } from "./helpers/daemon.js";

const FIXTURES = join(REPO_ROOT, "test/fixtures/releases");
/** Each schema state main went through, oldest first; a new schema change adds its release here. */
const RELEASES = [
  "f5dd4d5", // the first release (day one: core, cron, channels, memory FTS)
  "04b9ab1", // stream previews and the delivery ledger
  "3600268", // hybrid semantic memory (chunks with refs)
  "a938430", // budgets
  "17a0c90", // one-way layers, the Outbox
  "07766b1", // lean
  "3c576ba", // turn overhead
  "961ea9b", // taint, grants, egress
  "5fc3fd0", // API compatibility, idempotency
  "ef34cb3", // nothing fails silently
  "740a9cf", // /v1/responses chains are sessions
];
const KEY = "agent:main:telegram:dm:42";

const dirs: string[] = [];
afterAll(async () => {
  await cleanupDaemons();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data dir holding the fixture of `release` as its familiar.db. */
function dataDirWith(release: string): string {
  const dir = mkdtempSync(join(tmpdir(), `familiar-release-${release}-`));
  dirs.push(dir);
  const data = join(dir, "data");
  mkdirSync(data);
  copyFileSync(join(FIXTURES, `${release}.db`), join(data, "familiar.db"));
  return data;
}

describe("a database from each earlier release opens with this build", () => {
  it("keeps one fixture per release listed, and nothing unlisted", () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".db"));
    expect(files.sort()).toEqual(RELEASES.map((r) => `${r}.db`).sort());
  });

  it.each(RELEASES)("release %s: sessions, messages, cron jobs and usage survive the upgrade", (release) => {
    const data = dataDirWith(release);
    const before = new Database(join(data, "familiar.db"), { readonly: true });
    const old = storedVersions(before)!;
    before.close();
    const db = openDatabase(data, { migrations: allMigrations });
    try {
      expect(storedVersions(db)).toMatchObject(knownVersions(allMigrations));
      const sessions = new SessionStore(db);
      const head = sessions.head(KEY);
      expect(head?.agent_id).toBe("main");
      expect(sessions.messages(head!.id).map((m) => [m.role, m.content])).toEqual([
        ["user", `fixture question (${release})`],
        ["assistant", `fixture answer (${release})`],
      ]);
      const cron = new CronStore(db).runtimeJobs();
      expect(cron.invalid).toEqual([]);
      expect(cron.jobs.map((j) => [j.id, j.message])).toEqual([["fixture-job", "fixture reminder"]]);
      expect(db.prepare("SELECT SUM(total) AS t, SUM(cost) AS c FROM usage").get()).toEqual({
        t: 1500,
        c: 0.00036,
      });
    } finally {
      db.close();
    }
    const copy = join(data, `familiar.db.pre-${schemaLevel(old, allMigrations)}`);
    const upgraded = Object.entries(knownVersions(allMigrations)).some(([ns, v]) => (old[ns] ?? 0) < v);
    expect(existsSync(copy)).toBe(upgraded);
    if (upgraded) {
      const kept = new Database(copy, { readonly: true });
      expect(storedVersions(kept)).toEqual(old);
      kept.close();
    }
  });
});

describe("the real daemon", () => {
  it("starts on the first release's database and serves its session", async () => {
    const data = dataDirWith(RELEASES[0]!);
    const d = await startDaemonProcess({ dir: join(data, ".."), config: { log: { level: "warn" } } });
    const res = await fetch(`${d.url}/api/sessions`, { headers: d.headers() });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { sessions: { key: string; message_count: number }[] };
    expect(body.sessions.find((s) => s.key === KEY)?.message_count).toBe(2);
    expect((await d.stop()).code).toBe(0);
  });

  it("refuses a database a newer build wrote, in one line naming the copy to go back to", async () => {
    const data = dataDirWith(RELEASES[0]!);
    // This build upgrades the release's database (taking the copy), then a "newer build" moves one
    // namespace past what this build knows.
    const db = openDatabase(data, { migrations: allMigrations });
    const core = knownVersions(allMigrations).core!;
    db.prepare("UPDATE schema_version SET version = ? WHERE namespace = 'core'").run(core + 1);
    db.close();
    const file = join(data, "familiar.db");
    const copy = readdirSync(data).find((f) => f.startsWith("familiar.db.pre-"));
    expect(copy).toBeDefined();
    const d = await startDaemonProcess({ dir: join(data, ".."), noWait: true });
    const exit = await d.waitExit();
    expect(exit.code).toBe(1);
    const lines = d.stderrLines().filter((l) => l.trim() !== "");
    expect(lines).toEqual([
      `familiar: failed to start: ${file} was written by a newer Familiar (core:${core + 1} (this build knows core:${core})), so this build will not open it: run the newer build, or go back to the copy taken before that upgrade: stop Familiar, move ${file} (and familiar.db-wal, familiar.db-shm if present) aside, then rename ${join(data, copy!)} to ${file}; what changed since that upgrade is lost`,
    ]);
    // Untouched: still at the newer version.
    const after = new Database(file, { readonly: true });
    expect(storedVersions(after)!.core).toBe(core + 1);
    after.close();
  });
});
