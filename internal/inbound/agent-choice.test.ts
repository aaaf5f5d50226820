/**
 * The `/agent` choices behind their cache (agent-choice.ts): every read answers what a fresh SQLite
 * read would, on a real database file with a second connection, as another process writes it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { allMigrations } from "../daemon/migrations.js";
import { openDatabase, type Db } from "../store/db.js";
import { AgentChoiceStore } from "./agent-choice.js";

let dir: string | undefined;
const open: { close(): unknown }[] = [];
afterEach(() => {
  for (const d of open.splice(0)) d.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function db(): Db {
  dir = mkdtempSync(join(tmpdir(), "familiar-choice-"));
  const d = openDatabase(dir, { migrations: allMigrations });
  open.push(d);
  return d;
}

describe("agent choices", () => {
  it("a choice set through one store is read through another on the same database", () => {
    const d = db();
    const a = new AgentChoiceStore(d);
    const b = new AgentChoiceStore(d);
    expect(b.choice("gateway:app")).toBeUndefined(); // cached as none
    a.set("gateway:app", "helper");
    expect(b.choice("gateway:app")).toBe("helper");
    a.clear("gateway:app");
    expect(b.choice("gateway:app")).toBeUndefined();
  });

  it("sees what another connection committed (another process, a restore)", () => {
    const d = db();
    const s = new AgentChoiceStore(d);
    expect(s.choice("telegram:42")).toBeUndefined();
    const other = new Database(join(dir!, "familiar.db"));
    open.push(other);
    other
      .prepare("INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?)")
      .run("chat_agent:telegram:42", "coder", Date.now());
    expect(s.choice("telegram:42")).toBe("coder");
    other.prepare("DELETE FROM kv WHERE key = ?").run("chat_agent:telegram:42");
    expect(s.choice("telegram:42")).toBeUndefined();
  });

  it("a choice set in a transaction that rolls back is never answered", () => {
    const d = db();
    const s = new AgentChoiceStore(d);
    s.set("discord:7", "main");
    expect(s.choice("discord:7")).toBe("main");
    const tx = d.transaction(() => {
      s.set("discord:7", "helper");
      expect(s.choice("discord:7")).toBe("helper"); // inside: SQLite's own view
      throw new Error("rolled back");
    });
    expect(tx).toThrow("rolled back");
    expect(s.choice("discord:7")).toBe("main");
    expect(s.choice("discord:7")).toBe("main"); // and from the cache again
  });
});
