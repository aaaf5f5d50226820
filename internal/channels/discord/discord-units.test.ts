import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "../../store/db.js";
import { allMigrations } from "../../daemon/migrations.js";
import { CHAT_COMMANDS } from "../../inbound/commands.js";
import { guildVerdict, isAddressed, stripBotMention } from "./guild-gate.js";
import { SEEN_RETENTION_MS, SeenStore } from "./seen-store.js";
import { commandText, slashCommandBodies } from "./slash-commands.js";

describe("guild gate", () => {
  const cfg = {
    require_mention: true,
    guilds: {
      g1: { channels: ["c1"], require_mention: true },
      g2: { channels: ["*"], require_mention: false },
    },
  };
  it("allows listed channels, threads of listed parents, and every channel with *", () => {
    expect(guildVerdict(cfg, "g1", { id: "c1" })).toEqual({ allowed: true, requireMention: true });
    expect(guildVerdict(cfg, "g1", { id: "c2" }).allowed).toBe(false);
    expect(guildVerdict(cfg, "g1", { id: "t9", parentId: "c1" }).allowed).toBe(true);
    expect(guildVerdict(cfg, "g2", { id: "anything" })).toEqual({ allowed: true, requireMention: false });
    expect(guildVerdict(cfg, "g3", { id: "c1" }).allowed).toBe(false);
    // Names work too, with or without '#', case-insensitively.
    const named = { ...cfg, guilds: { g1: { channels: ["#General"], require_mention: true } } };
    expect(guildVerdict(named, "g1", { id: "c7", names: ["general"] }).allowed).toBe(true);
    expect(
      guildVerdict(named, "g1", { id: "t1", parentId: "c7", names: ["a-thread", "general"] }).allowed,
    ).toBe(true);
    expect(guildVerdict(named, "g1", { id: "c8", names: ["random"] }).allowed).toBe(false);
    expect(
      guildVerdict({ ...cfg, guilds: { "*": { channels: ["*"], require_mention: true } } }, "g3", { id: "c" })
        .allowed,
    ).toBe(true);
  });
  it("turns mention gating off when either level says so", () => {
    expect(guildVerdict({ ...cfg, require_mention: false }, "g1", { id: "c1" }).requireMention).toBe(false);
  });
  it("detects mentions and replies to the bot, and strips the mention", () => {
    expect(isAddressed({ content: "<@42> hi" }, "42")).toBe(true);
    expect(isAddressed({ content: "<@!42> hi" }, "42")).toBe(true);
    expect(isAddressed({ content: "hi", mentions: [{ id: "42" }] }, "42")).toBe(true);
    expect(isAddressed({ content: "hi", referenced_message: { author: { id: "42" } } }, "42")).toBe(true);
    expect(isAddressed({ content: "hi <@43>", mentions: [{ id: "43" }] }, "42")).toBe(false);
    expect(stripBotMention("<@42>  /status", "42")).toBe("/status");
    expect(stripBotMention("hey <@!42> there", "42")).toBe("hey there");
  });
});

describe("slash commands", () => {
  it("mirrors the shared command set with valid option names", () => {
    const bodies = slashCommandBodies();
    expect(bodies.map((b) => b.name)).toEqual(CHAT_COMMANDS.map((c) => c.name));
    for (const b of bodies) {
      expect(String(b.name)).toMatch(/^[a-z0-9_-]{1,32}$/);
      expect(String(b.description).length).toBeLessThanOrEqual(100);
      for (const o of (b.options ?? []) as { name: string }[]) expect(o.name).toMatch(/^[a-z0-9_-]{1,32}$/);
    }
    const approve = bodies.find((b) => b.name === "approve") as { options: { required: boolean }[] };
    expect(approve.options[0]?.required).toBe(true);
  });
  it("turns an interaction back into a text command", () => {
    expect(commandText("status")).toBe("/status");
    expect(commandText("model", [{ name: "model", value: "a/b" }])).toBe("/model a/b");
    expect(commandText("compact", [{ name: "instructions", value: "" }])).toBe("/compact");
  });
});

describe("seen store", () => {
  let dir: string | undefined;
  let db: Db | undefined;
  afterEach(() => {
    db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  it("claims an id once, across instances, and forgets ids past retention", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-discord-"));
    db = openDatabase(dir, { migrations: allMigrations });
    let now = 1_000_000;
    const a = new SeenStore(db, () => now);
    expect(a.claim("m1")).toBe(true);
    expect(a.claim("m1")).toBe(false);
    const b = new SeenStore(db, () => now);
    expect(b.claim("m1")).toBe(false);
    // Pruning runs every 500 claims; old ids leave the table, recent ones stay.
    now += SEEN_RETENTION_MS + 1;
    for (let i = 0; i < 500; i++) b.claim(`x${i}`);
    const c = new SeenStore(db, () => now);
    expect(c.claim("m1")).toBe(true);
    expect(c.claim("x1")).toBe(false);
  });
});
