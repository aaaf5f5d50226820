/**
 * The pending client calls of a persistent `/v1` session (openai-pending-calls.ts), read from a real
 * SQLite store: the answer read from the session row's `tail_kind` (or, when it is unknown, the
 * newest row alone) must be the one all the rows give.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { allMigrations } from "../daemon/migrations.js";
import { SessionStore, type NewMessage } from "../session/session-store.js";
import { openDatabase, type Db } from "../store/db.js";
import { pendingInRows, pendingInSession } from "./openai-pending-calls.js";

let dir: string | undefined;
let db: Db | undefined;
afterEach(() => {
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = dir = undefined;
});

function store(): SessionStore {
  dir = mkdtempSync(join(tmpdir(), "familiar-pending-"));
  db = openDatabase(dir, { migrations: allMigrations });
  return new SessionStore(db);
}

const KEY = "agent:main:gateway:named:app";
const calls = [
  { id: "call_1", name: "get_weather", arguments: '{"city":"Oslo"}' },
  { id: "call_2", name: "get_time", arguments: "{}" },
];

describe("pending client calls of a persistent session", () => {
  it("agrees with a read of every row after each kind of newest message", () => {
    const s = store();
    expect(pendingInSession(s, KEY)).toEqual([]); // no session yet
    const id = s.create(KEY, "main").id;
    const steps: [NewMessage, string[]][] = [
      [{ role: "user", content: "weather?" }, []],
      [{ role: "assistant", content: "", toolCalls: calls }, ["call_1", "call_2"]],
      [{ role: "tool", content: "sunny", toolCallId: "call_1" }, ["call_2"]],
      [{ role: "tool", content: "noon", toolCallId: "call_2" }, []],
      [{ role: "assistant", content: "Sunny at noon." }, []],
      [{ role: "user", content: "and tomorrow?" }, []],
      [{ role: "assistant", content: "", toolCalls: calls, status: "error" }, []],
      [{ role: "assistant", content: "", toolCalls: [calls[0]!] }, ["call_1"]],
    ];
    expect(pendingInSession(s, KEY)).toEqual([]); // an empty session
    const unknown = db!.prepare("UPDATE sessions SET tail_kind = NULL WHERE id = ?");
    for (const [m, pending] of steps) {
      s.append(id, m);
      expect(s.head(KEY)?.tail_kind).toBe(m.role === "tool" ? "tool" : m.toolCalls ? "calls" : "plain");
      const found = pendingInSession(s, KEY);
      expect(found.map((c) => c.id)).toEqual(pending);
      expect(found).toEqual(pendingInRows(s.messages(id)));
      // A session whose tail is unknown (older than core:2, a compaction successor) reads the rows.
      unknown.run(id);
      expect(pendingInSession(s, KEY)).toEqual(found);
    }
  });

  it("a rolled-back append takes its tail back with it", () => {
    const s = store();
    const id = s.create(KEY, "main").id;
    s.append(id, { role: "assistant", content: "", toolCalls: calls });
    const plainThenFail = db!.transaction(() => {
      s.append(id, { role: "user", content: "never mind" });
      throw new Error("rolled back");
    });
    expect(plainThenFail).toThrow("rolled back");
    expect(s.head(KEY)?.tail_kind).toBe("calls");
    expect(pendingInSession(s, KEY).map((c) => c.id)).toEqual(["call_1", "call_2"]);
  });

  it("a call stored as failed and set back to ok is pending again (the tail kind ignores status)", () => {
    const s = store();
    const id = s.create(KEY, "main").id;
    const mid = s.append(id, { role: "assistant", content: "", toolCalls: calls, status: "error" });
    expect(pendingInSession(s, KEY)).toEqual([]);
    s.setStatus(mid, "ok");
    expect(pendingInSession(s, KEY).map((c) => c.id)).toEqual(["call_1", "call_2"]);
  });

  it("reads the live session of the key: after /new the old session's calls are not pending", () => {
    const s = store();
    const old = s.create(KEY, "main").id;
    s.append(old, { role: "assistant", content: "", toolCalls: calls });
    expect(pendingInSession(s, KEY)).toHaveLength(2);
    s.reset(KEY, "main");
    expect(pendingInSession(s, KEY)).toEqual([]);
  });
});
