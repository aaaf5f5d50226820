/**
 * A quiet spell (internal/store/idle-shrink.ts) drops the session message cache, as the daemon wires
 * it: nothing is lost, the next read rebuilds the rows from the database, and writes keep working.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { startIdleShrink } from "../store/idle-shrink.js";
import { cacheOf } from "./message-cache.js";
import { SessionStore } from "./session-store.js";

let core: TestCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

describe("session cache on a quiet spell", () => {
  it("is emptied once the writes stop and rebuilt on the next read", () => {
    core = createTestCore();
    const db = core.db;
    const store = new SessionStore(db);
    const s = store.create("agent:main:gateway:idle", "main");
    store.append(s.id, { role: "user", content: "one" });
    store.append(s.id, { role: "assistant", content: "two" });
    const before = store.messages(s.id);
    expect(cacheOf(db).size).toBe(1);

    const shrink = startIdleShrink(db, 0, () => cacheOf(db).clear());
    store.append(s.id, { role: "user", content: "three" });
    expect(shrink.check()).toBe(false); // writes since the last check: busy, the cache stays
    expect(cacheOf(db).size).toBe(1);
    expect(shrink.check()).toBe(true); // quiet: dropped
    expect(cacheOf(db).size).toBe(0);

    expect(store.messages(s.id)).toEqual([...before, expect.objectContaining({ content: "three" })]);
    store.append(s.id, { role: "assistant", content: "four" });
    expect(store.messages(s.id).map((m) => m.content)).toEqual(["one", "two", "three", "four"]);
    shrink.stop();
  });
});
