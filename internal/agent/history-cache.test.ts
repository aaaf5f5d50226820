/**
 * The kept history (history-cache.ts) must equal a full rebuild, `toChatMessages(orderByTurn(...))`,
 * after every kind of change a session sees: appends, a reply stored behind a queued message, a turn
 * that must not see messages queued after it, tool calls left open and closed later, a status change,
 * a rolled-back append, a reset and a compaction's successor session. Real SQLite, real SessionStore.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { SessionStore, type NewMessage } from "../session/session-store.js";
import { orderByTurn, toChatMessages } from "./history.js";
import { historyOf } from "./history-cache.js";

let core: TestCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

const user = (text: string, req: string): NewMessage => ({ role: "user", content: text, requestId: req });
const answer = (text: string, req: string): NewMessage => ({
  role: "assistant",
  content: text,
  requestId: req,
});

/** Earlier turns every session starts with: short sessions are converted afresh and keep nothing. */
const SEED = 20;
function seed(store: SessionStore, sid: string): void {
  for (let i = 0; i < SEED / 2; i++) {
    store.append(sid, user(`earlier ${i}`, `seed-${sid}-${i}`));
    store.append(sid, answer(`earlier answer ${i}`, `seed-${sid}-${i}`));
  }
}

function setup(): { store: SessionStore; sid: string } {
  core = createTestCore();
  const store = new SessionStore(core.db);
  const sid = store.create("agent:main:gateway:h", "main").id;
  seed(store, sid);
  return { store, sid };
}

/** The kept history and a full rebuild from a fresh copy of the rows: equal, and returned. */
function check(store: SessionStore, sid: string, upto?: number): ReturnType<typeof historyOf> {
  const kept = historyOf(store.messagesView(sid), upto);
  expect(kept).toEqual(toChatMessages(orderByTurn(store.messages(sid), upto)));
  return kept;
}

/** The same, without the seeded turns. */
const checkNew = (store: SessionStore, sid: string, upto?: number): ReturnType<typeof historyOf> =>
  check(store, sid, upto).slice(SEED);

describe("kept history", () => {
  it("extends by appended turns and reuses the converted messages", () => {
    const { store, sid } = setup();
    let prev = check(store, sid);
    for (let i = 0; i < 20; i++) {
      const u = store.append(sid, user(`q${i}`, `r${i}`));
      const h = check(store, sid, u);
      // Earlier messages are the very objects of the previous turn: only the new rows were converted.
      for (let j = 0; j < prev.length; j++) expect(h[j]).toBe(prev[j]);
      store.append(sid, answer(`a${i}`, `r${i}`));
      prev = check(store, sid, u);
    }
    expect(prev).toHaveLength(SEED + 40);
  });

  it("keeps nothing for a short session and converts it afresh", () => {
    core = createTestCore();
    const store = new SessionStore(core.db);
    const sid = store.create("agent:main:gateway:short", "main").id;
    const u = store.append(sid, user("hi", "r1"));
    const a = check(store, sid, u);
    expect(check(store, sid, u)[0]).not.toBe(a[0]);
    seed(store, sid);
    const b = check(store, sid);
    expect(check(store, sid)[0]).toBe(b[0]);
  });

  it("hands out a new array each call that the caller may change", () => {
    const { store, sid } = setup();
    const u = store.append(sid, user("hi", "r1"));
    const a = historyOf(store.messagesView(sid), u);
    a.push({ role: "user", content: "mine" });
    expect(historyOf(store.messagesView(sid), u).slice(SEED)).toEqual([{ role: "user", content: "hi" }]);
  });

  it("places a reply stored behind a queued message at its own turn, and hides turns queued later", () => {
    const { store, sid } = setup();
    const u1 = store.append(sid, user("first", "r1"));
    check(store, sid, u1);
    // A second message arrives while the first turn runs: stored ahead of the first reply.
    const u2 = store.append(sid, user("second", "r2"));
    expect(checkNew(store, sid, u1)).toEqual([{ role: "user", content: "first" }]);
    check(store, sid); // kept with both messages: the reply below must go between them
    store.append(sid, answer("reply one", "r1"));
    const h = checkNew(store, sid, u2);
    expect(h.map((m) => m.content)).toEqual(["first", "reply one", "second"]);
    store.append(sid, answer("reply two", "r2"));
    const u3 = store.append(sid, user("third", "r3"));
    expect(checkNew(store, sid, u3).map((m) => m.content)).toEqual([
      "first",
      "reply one",
      "second",
      "reply two",
      "third",
    ]);
    // An older turn run late (a retry) does not see what came after it.
    expect(checkNew(store, sid, u1).map((m) => m.content)).toEqual(["first", "reply one"]);
    check(store, sid, u3);
  });

  it("closes open tool calls as interrupted until their results arrive", () => {
    const { store, sid } = setup();
    const u = store.append(sid, user("use a tool", "r1"));
    store.append(sid, {
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "c1", name: "read", arguments: "{}" },
        { id: "c2", name: "write", arguments: "{}" },
      ],
      requestId: "r1",
    });
    const open = check(store, sid, u);
    expect(open.slice(-2)).toMatchObject([
      { role: "tool", tool_call_id: "c1", content: expect.stringContaining("interrupted") },
      { role: "tool", tool_call_id: "c2", content: expect.stringContaining("interrupted") },
    ]);
    store.append(sid, {
      role: "tool",
      content: "file text",
      toolCallId: "c1",
      toolName: "read",
      requestId: "r1",
    });
    const half = check(store, sid, u);
    expect(half.slice(-2)).toMatchObject([
      { role: "tool", tool_call_id: "c1", content: "file text" },
      { role: "tool", tool_call_id: "c2", content: expect.stringContaining("interrupted") },
    ]);
    // The daemon died before c2 finished; the next turn's message closes it for good.
    const u2 = store.append(sid, user("go on", "r2"));
    const next = check(store, sid, u2);
    expect(next.slice(-2)).toMatchObject([
      { role: "tool", tool_call_id: "c2", content: expect.stringContaining("interrupted") },
      { role: "user", content: "go on" },
    ]);
  });

  it("sees a status change and a rolled-back append", () => {
    const { store, sid } = setup();
    const u = store.append(sid, user("hi", "r1"));
    const pending = store.append(sid, { ...answer("half an answer", "r1"), status: "pending" });
    expect(check(store, sid, u).at(-1)).toEqual({ role: "assistant", content: "half an answer" });
    store.setStatus(pending, "aborted");
    expect(check(store, sid, u).at(-1)).toEqual({
      role: "assistant",
      content: "half an answer\n[interrupted]",
    });
    store.setStatus(pending, "error");
    expect(checkNew(store, sid, u)).toEqual([{ role: "user", content: "hi" }]);
    expect(() =>
      core!.db.transaction(() => {
        store.append(sid, user("rolled back", "r2"));
        check(store, sid);
        throw new Error("abort the transaction");
      })(),
    ).toThrow("abort the transaction");
    expect(checkNew(store, sid).map((m) => m.content)).toEqual(["hi"]);
  });

  it("starts over for a reset session and a compaction's successor", () => {
    const { store, sid } = setup();
    const u = store.append(sid, user("old", "r1"));
    store.append(sid, answer("old reply", "r1"));
    check(store, sid, u);
    const fresh = store.reset("agent:main:gateway:h", "main");
    seed(store, fresh.id);
    const u2 = store.append(fresh.id, user("new", "r2"));
    expect(checkNew(store, fresh.id, u2)).toEqual([{ role: "user", content: "new" }]);
    // A successor session (compaction) gets its summary and kept rows as its own messages.
    const next = store.create("agent:main:gateway:h", "main", { parentId: fresh.id });
    store.append(next.id, { role: "system", content: "Summary so far", status: "summary" });
    seed(store, next.id);
    const u3 = store.append(next.id, user("after compaction", "r3"));
    expect(check(store, next.id, u3)[0]).toEqual({ role: "system", content: "Summary so far" });
    expect(check(store, next.id, u3).slice(SEED + 1)).toEqual([
      { role: "user", content: "after compaction" },
    ]);
    // The old session still reads as it was.
    expect(checkNew(store, sid).map((m) => m.content)).toEqual(["old", "old reply"]);
  });

  it("matches a full rebuild over a random mix of interleaved turns", () => {
    const { store, sid } = setup();
    let state = 7;
    const rnd = (n: number): number => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % n;
    };
    const users: number[] = [];
    for (let i = 0; i < 300; i++) {
      const req = `r${rnd(12)}`;
      const kind = rnd(5);
      if (kind === 0) users.push(store.append(sid, user(`u${i}`, req)));
      else if (kind === 1) store.append(sid, answer(`a${i}`, req));
      else if (kind === 2) store.append(sid, { role: "event", content: `e${i}` });
      else if (kind === 3)
        store.append(sid, {
          role: "assistant",
          content: "",
          toolCalls: [{ id: `c${i}`, name: "t", arguments: "{}" }],
          requestId: req,
        });
      else store.append(sid, { role: "tool", content: `t${i}`, toolCallId: `c${i - 1}`, requestId: req });
      const upto = users.length > 0 && rnd(3) > 0 ? users[rnd(users.length)] : undefined;
      check(store, sid, upto);
    }
  });
});
