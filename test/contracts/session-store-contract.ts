/**
 * The ONE contract suite for the session store (internal/session/session-store.ts): what the agent
 * host, the gateway's session admin and the CLI rely on. A key resolves to exactly one live session;
 * messages come back in the order they were appended, and are on disk when `append` returns (they
 * survive a restart); a reset starts a new session and keeps the old one readable; a read never serves
 * rows another connection deleted or a transaction rolled back.
 *
 * Usage (inside a vitest file): `runSessionStoreContract("sqlite", factory)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionStore } from "../../internal/session/session-store.js";

/** What the suite needs to drive one session store on a real SQLite file. */
export interface SessionStoreHarness {
  /** The store of the running daemon; replaced by `restart()`. */
  store: SessionStore;
  /** Closes the database and builds the store again on the same file (a daemon restart). */
  restart(): SessionStore;
  /** A store on another connection to the same file (the CLI while the daemon runs). */
  other(): SessionStore;
  cleanup(): void;
}

const contents = (s: SessionStore, id: string): string[] => s.messages(id).map((m) => m.content);

/** Registers the contract tests for one implementation. */
export function runSessionStoreContract(name: string, factory: () => SessionStoreHarness): void {
  describe(`session store contract: ${name}`, () => {
    let h: SessionStoreHarness | undefined;
    const make = (): SessionStoreHarness => (h = factory());
    afterEach(() => {
      h?.cleanup();
      h = undefined;
    });

    it("resolves a key to one live session, created once", () => {
      const { store } = make();
      expect(store.head("agent:main:telegram:1")).toBeUndefined();
      const a = store.ensure("agent:main:telegram:1", "main");
      const b = store.ensure("agent:main:telegram:1", "main");
      expect(b.id).toBe(a.id);
      expect(store.head("agent:main:telegram:1")?.id).toBe(a.id);
      expect(store.get(a.id)?.agent_id).toBe("main");
    });

    it("returns messages in append order with growing ids", () => {
      const { store } = make();
      const s = store.ensure("k", "main");
      const ids = ["one", "two", "three", "four"].map((content, i) =>
        store.append(s.id, { role: i % 2 === 0 ? "user" : "assistant", content }),
      );
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(contents(store, s.id)).toEqual(["one", "two", "three", "four"]);
      expect(store.page(s.id, ids[1]!, 10).map((m) => m.content)).toEqual(["three", "four"]);
      expect(store.stats(s.id).messages).toBe(4);
    });

    it("keeps sessions, heads, messages and statuses across a restart", () => {
      const x = make();
      const s = x.store.ensure("agent:main:discord:9", "main", { origin: "discord" });
      x.store.append(s.id, { role: "user", content: "remember me" });
      const pending = x.store.append(s.id, { role: "assistant", content: "half", status: "pending" });
      x.store.setStatus(pending, "aborted");
      x.store.setModelOverride(s.id, "fake/gpt-4o");
      const after = x.restart();
      expect(after.head("agent:main:discord:9")?.id).toBe(s.id);
      expect(after.get(s.id)).toMatchObject({ origin: "discord", model_override: "fake/gpt-4o" });
      expect(after.messages(s.id).map((m) => [m.content, m.status])).toEqual([
        ["remember me", "ok"],
        ["half", "aborted"],
      ]);
    });

    it("reset starts a new live session and keeps the old one readable", () => {
      const { store } = make();
      const old = store.ensure("k", "main");
      store.append(old.id, { role: "user", content: "before" });
      const fresh = store.reset("k", "main", "new");
      expect(fresh.id).not.toBe(old.id);
      expect(store.head("k")?.id).toBe(fresh.id);
      expect(contents(store, fresh.id)).toEqual([]);
      expect(contents(store, old.id)).toEqual(["before"]);
      expect(store.listByAgent("main").map((r) => r.id)).toEqual(expect.arrayContaining([old.id, fresh.id]));
    });

    it("sees what another connection appended, and never serves rows it deleted", () => {
      const x = make();
      const s = x.store.ensure("k", "main");
      x.store.append(s.id, { role: "user", content: "one" });
      expect(contents(x.store, s.id)).toEqual(["one"]);
      const cli = x.other();
      cli.append(s.id, { role: "assistant", content: "two" });
      expect(contents(x.store, s.id)).toEqual(["one", "two"]);
      expect(cli.delete(s.id)).toBe(true);
      expect(contents(x.store, s.id)).toEqual([]);
      expect(x.store.head("k")).toBeUndefined();
    });

    it("never serves a message whose transaction rolled back", () => {
      const { store } = make();
      const s = store.ensure("k", "main");
      store.append(s.id, { role: "user", content: "kept" });
      expect(contents(store, s.id)).toEqual(["kept"]);
      const turn = store.db.transaction(() => {
        store.append(s.id, { role: "assistant", content: "rolled back" });
        expect(contents(store, s.id)).toEqual(["kept", "rolled back"]);
        throw new Error("turn failed");
      });
      expect(() => turn()).toThrow("turn failed");
      expect(contents(store, s.id)).toEqual(["kept"]);
    });

    it("deletes a session with its messages and its head", () => {
      const x = make();
      const s = x.store.ensure("k", "main");
      x.store.append(s.id, { role: "user", content: "gone" });
      expect(x.store.delete(s.id)).toBe(true);
      expect(x.store.delete(s.id)).toBe(false);
      const after = x.restart();
      expect(after.get(s.id)).toBeUndefined();
      expect(after.head("k")).toBeUndefined();
      expect(after.page(s.id, 0, 10)).toEqual([]);
    });
  });
}
