/**
 * The session store's message cache: a second read returns what the store holds, whichever
 * SessionStore of the db wrote it, including status changes, and rows that vanish (a rolled-back
 * transaction, a deleted session) are not served from memory.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { SessionStore } from "./session-store.js";

let core: TestCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

const contents = (s: SessionStore, id: string): string[] => s.messages(id).map((m) => m.content);

describe("SessionStore message cache", () => {
  it("sees appends made through another SessionStore of the same db", () => {
    core = createTestCore();
    const a = new SessionStore(core.db);
    const b = new SessionStore(core.db);
    const s = a.create("agent:main:gateway:x", "main");
    a.append(s.id, { role: "user", content: "one" });
    expect(contents(a, s.id)).toEqual(["one"]);
    b.append(s.id, { role: "assistant", content: "two" });
    a.append(s.id, { role: "user", content: "three" });
    expect(contents(a, s.id)).toEqual(["one", "two", "three"]);
    expect(contents(b, s.id)).toEqual(["one", "two", "three"]);
  });

  it("reflects status changes and hands out arrays the caller may change", () => {
    core = createTestCore();
    const store = new SessionStore(core.db);
    const s = store.create("agent:main:gateway:y", "main");
    const id = store.append(s.id, { role: "assistant", content: "partial", status: "pending" });
    expect(store.messages(s.id)[0]?.status).toBe("pending");
    store.setStatus(id, "aborted");
    expect(store.messages(s.id)[0]?.status).toBe("aborted");
    store.messages(s.id).pop();
    expect(store.messages(s.id)).toHaveLength(1);
  });

  it("reloads when cached rows were rolled back", () => {
    core = createTestCore();
    const store = new SessionStore(core.db);
    const s = store.create("agent:main:gateway:z", "main");
    store.append(s.id, { role: "user", content: "kept" });
    const db = core.db;
    expect(() =>
      db.transaction(() => {
        store.append(s.id, { role: "user", content: "rolled back" });
        expect(contents(store, s.id)).toEqual(["kept", "rolled back"]);
        throw new Error("abort the transaction");
      })(),
    ).toThrow("abort the transaction");
    expect(contents(store, s.id)).toEqual(["kept"]);
    store.append(s.id, { role: "user", content: "after" });
    expect(contents(store, s.id)).toEqual(["kept", "after"]);
  });

  it("reloads when the session was deleted by other code (an agent's sessions in one statement)", () => {
    core = createTestCore();
    const store = new SessionStore(core.db);
    const s = store.create("agent:gone:gateway:v", "gone");
    store.append(s.id, { role: "user", content: "one" });
    store.append(s.id, { role: "assistant", content: "two" });
    expect(contents(store, s.id)).toEqual(["one", "two"]);
    core.db.prepare("DELETE FROM sessions WHERE agent_id = ?").run("gone");
    expect(store.messages(s.id)).toEqual([]);
  });

  it("forgets a deleted session", () => {
    core = createTestCore();
    const store = new SessionStore(core.db);
    const s = store.create("agent:main:gateway:w", "main");
    store.append(s.id, { role: "user", content: "gone soon" });
    expect(contents(store, s.id)).toEqual(["gone soon"]);
    store.delete(s.id);
    expect(store.messages(s.id)).toEqual([]);
  });
});
