import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "../../store/db.js";
import { allMigrations } from "../../daemon/migrations.js";
import { SessionStore } from "../../session/session-store.js";
import { applyCompaction, CompactionError, latestSuccessor, lineage } from "./lineage.js";
import { SUMMARY_MARKER } from "./prompts.js";

let dir: string;
let db: Db;
let store: SessionStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "familiar-lineage-"));
  db = openDatabase(dir, { migrations: allMigrations });
  store = new SessionStore(db);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function seed(key = "agent:main:telegram:dm:1") {
  const s = store.create(key, "main", {
    compactStrategy: "manual",
    compactKeepLastN: 4,
    compactObservationMask: false,
    compactSummaryModel: "local/small",
  });
  store.setModelOverride(s.id, "openai/gpt-4o");
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) {
    ids.push(store.append(s.id, { role: "user", content: `question ${i}` }));
    ids.push(
      store.append(s.id, {
        role: "assistant",
        content: "",
        toolCalls: [{ id: `c${i}`, name: "read_file", arguments: `{"path":"f${i}"}` }],
      }),
    );
    ids.push(
      store.append(s.id, { role: "tool", content: `r${i}`, toolCallId: `c${i}`, toolName: "read_file" }),
    );
    ids.push(store.append(s.id, { role: "assistant", content: `answer ${i}`, model: "openai/gpt-4o" }));
  }
  return { session: store.get(s.id)!, ids };
}

describe("applyCompaction", () => {
  it("archives the source, creates the successor under the key and copies kept messages verbatim", () => {
    const { session, ids } = seed();
    const kept = ids.slice(-4);
    const r = applyCompaction(db, {
      sourceSessionId: session.id,
      summary: "- user asked 6 questions",
      level: "full",
      keptMessageIds: kept,
      tokensBefore: 900,
      tokensAfter: 200,
      messagesSummarised: 20,
      instructions: "short",
      now: 1_000,
    });
    const src = store.get(session.id)!;
    expect(src.archived_at).toBe(1_000);
    expect(src.successor_id).toBe(r.successorId);
    expect(store.messages(session.id)).toHaveLength(24); // nothing deleted
    const succ = store.get(r.successorId)!;
    expect(succ).toMatchObject({
      key: session.key,
      agent_id: "main",
      parent_id: session.id,
      model_override: "openai/gpt-4o",
      compact_strategy: "manual",
      compact_keep_last_n: 4,
      compact_observation_mask: 0,
      compact_summary_model: "local/small",
      archived_at: null,
    });
    expect(store.head(session.key)!.id).toBe(r.successorId);
    const msgs = store.messages(r.successorId);
    expect(msgs[0]).toMatchObject({ role: "system", status: "summary", id: r.summaryMessageId });
    expect(msgs[0]!.content.startsWith(`${SUMMARY_MARKER}\n- user asked 6 questions`)).toBe(true);
    const original = store.messages(session.id).slice(-4);
    expect(msgs.slice(1).map(({ id: _id, session_id: _s, ...rest }) => rest)).toEqual(
      original.map(({ id: _id, session_id: _s, ...rest }) => rest),
    );
  });

  it("is walkable backward and forward from any session id, with all summaries", () => {
    const { session, ids } = seed();
    const a = applyCompaction(db, {
      sourceSessionId: session.id,
      summary: "first",
      level: "full",
      keptMessageIds: ids.slice(-4),
      tokensBefore: 900,
      tokensAfter: 200,
      messagesSummarised: 20,
      now: 1_000,
    });
    store.append(a.successorId, { role: "user", content: "more" });
    const b = applyCompaction(db, {
      sourceSessionId: a.successorId,
      summary: "second",
      level: "note",
      keptMessageIds: [],
      tokensBefore: 300,
      tokensAfter: 50,
      messagesSummarised: 6,
      now: 2_000,
    });
    for (const id of [session.id, a.successorId, b.successorId]) {
      const l = lineage(db, id)!;
      const chain = [...l.backward.map((e) => e.id).reverse(), l.session.id, ...l.forward.map((e) => e.id)];
      expect(chain).toEqual([session.id, a.successorId, b.successorId]);
      expect(l.summaries.map((s) => [s.summary, s.level])).toEqual([
        ["first", "full"],
        ["second", "note"],
      ]);
    }
    expect(lineage(db, a.successorId)!.session).toMatchObject({ archivedAt: 2_000, messageCount: 6 });
    expect(latestSuccessor(db, session.id)).toBe(b.successorId);
    expect(lineage(db, "nope")).toBeUndefined();
  });

  it("refuses an archived source and names its successor, changing nothing", () => {
    const { session, ids } = seed();
    const input = {
      sourceSessionId: session.id,
      summary: "s",
      level: "full" as const,
      keptMessageIds: ids.slice(-2),
      tokensBefore: 1,
      tokensAfter: 1,
      messagesSummarised: 1,
    };
    const a = applyCompaction(db, input);
    const count = db.prepare("SELECT COUNT(*) AS n FROM sessions").get() as { n: number };
    let err: unknown;
    try {
      applyCompaction(db, input);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CompactionError);
    expect(err).toMatchObject({ code: "SESSION_ARCHIVED", info: { successorId: a.successorId } });
    expect(db.prepare("SELECT COUNT(*) AS n FROM sessions").get()).toEqual(count);
  });

  it("rolls back entirely when a kept message belongs to another session", () => {
    const { session } = seed();
    const other = seed("agent:main:telegram:dm:2");
    expect(() =>
      applyCompaction(db, {
        sourceSessionId: session.id,
        summary: "s",
        level: "full",
        keptMessageIds: [other.ids[0]!],
        tokensBefore: 1,
        tokensAfter: 1,
        messagesSummarised: 1,
      }),
    ).toThrow(/not in session/);
    expect(store.get(session.id)!.archived_at).toBeNull();
    expect(store.head(session.key)!.id).toBe(session.id);
    expect(db.prepare("SELECT COUNT(*) AS n FROM compaction_summaries").get()).toEqual({ n: 0 });
  });

  it("does not move the head of a key that was reset meanwhile", () => {
    const { session, ids } = seed();
    const fresh = store.reset(session.key, "main");
    const r = applyCompaction(db, {
      sourceSessionId: session.id,
      summary: "s",
      level: "full",
      keptMessageIds: ids.slice(-1),
      tokensBefore: 1,
      tokensAfter: 1,
      messagesSummarised: 1,
    });
    expect(store.head(session.key)!.id).toBe(fresh.id);
    expect(store.get(r.successorId)!.parent_id).toBe(session.id);
  });
});
