/**
 * A benign OpenClaw directory imports as the owner would expect (issue 45, "exactly as today"): what
 * names only the owner (the single owner openclaw.json names, or the only user it allows) is the
 * owner's own and comes in without `--accept`; what grants power to anyone else stays asked. At a
 * terminal the owner is asked once (the real CLI under a pseudo-terminal, `script`); without one,
 * one line says nothing was asked.
 */
import Database from "better-sqlite3";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { parse } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { importOpenClawCommand } from "../../internal/cli/import.js";
import { askConsent, NOT_ASKED } from "../../internal/importer/ask-consent.js";
import { ownerIds } from "../../internal/importer/owner-ids.js";
import { runCliInTerminal } from "../helpers/pty-cli.js";
import { copyFixture, type ImportedConfig } from "./openclaw-fixture.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(change?: (c: Record<string, Record<string, unknown>>) => void): {
  from: string;
  into: string;
} {
  const from = copyFixture();
  dirs.push(join(from, ".."));
  if (change) {
    const file = join(from, "openclaw.json");
    const c = JSON.parse(readFileSync(file, "utf8")) as Record<string, Record<string, unknown>>;
    change(c);
    writeFileSync(file, JSON.stringify(c, null, 2));
  }
  return { from, into: join(from, "..", "familiar") };
}

function run(from: string, into: string): { code: number; out: string } {
  let out = "";
  const code = importOpenClawCommand({
    from,
    into,
    config: "./config.yaml",
    out: (t) => (out += t),
    err: (t) => (out += t),
  });
  return { code, out };
}

const configOf = (into: string): ImportedConfig =>
  parse(readFileSync(join(into, "config.yaml"), "utf8")) as ImportedConfig;

/** The `? [key]` lines under "Needs your confirmation". */
const askedKeys = (out: string): string[] =>
  [...out.matchAll(/^ {2}\? \[([^\]]+)\]/gm)].map((m) => m[1] ?? "");

describe("familiar import openclaw: the owner's own comes in without asking", () => {
  it("imports the owner's allow list, pairing and cron target with no --accept; a group stays asked", () => {
    const { from, into } = setup();
    const r = run(from, into);
    expect(r.code, r.out).toBe(0);
    const c = configOf(into);
    expect(c.channels.telegram.allow_from).toEqual(["111111111"]);
    expect(c.channels.telegram.groups ?? []).toEqual([]);
    expect(c.cron.jobs).toEqual([
      expect.objectContaining({ id: "openclaw-morning-brief", deliver: "telegram:111111111" }),
    ]);
    expect(r.out).toContain(
      "telegram allow_from: updated ([111111111]; the owner's own: the only user openclaw.json allows)",
    );
    expect(r.out).toContain(
      "+ telegram user 222222222: added (approved in OpenClaw; the owner's own: the owner openclaw.json names)",
    );
    const db = new Database(join(into, "data", "familiar.db"), { readonly: true });
    expect(db.prepare("SELECT user_id FROM pairing_allowed").all()).toEqual([{ user_id: "222222222" }]);
    db.close();
    // Only what grants power to others (the group's members) or that the desk would hold is asked.
    expect(askedKeys(r.out).sort()).toEqual(["skill-file:tide-check/scripts/tides.sh", "telegram.groups"]);
    expect(r.out).toContain(NOT_ASKED);
  });

  it("asks again as soon as anyone but the owner is named", () => {
    // Two users allowed: neither is "the only one"; the cron job to one of them is asked too.
    const two = setup((c) => {
      (c.channels?.telegram as Record<string, unknown>).allowFrom = ["111111111", "999999999"];
    });
    const a = run(two.from, two.into);
    expect(a.code).toBe(0);
    expect(askedKeys(a.out)).toEqual(
      expect.arrayContaining(["telegram.allow_from", "cron:openclaw-morning-brief"]),
    );
    expect(configOf(two.into).channels.telegram.allow_from).toEqual([]);
    expect(configOf(two.into).cron.jobs).toEqual([]);

    // An open door names no owner: the "owner" it names and the heartbeat to them are asked.
    const open = setup((c) => {
      Object.assign(c.channels?.telegram as Record<string, unknown>, { dmPolicy: "open" });
      c.commands = { ownerAllowFrom: ["telegram:666666666"] };
      (c.agents?.defaults as Record<string, unknown>).heartbeat = {
        every: "1h",
        target: "telegram",
        to: "666666666",
      };
    });
    const b = run(open.from, open.into);
    expect(b.code).toBe(0);
    expect(askedKeys(b.out)).toEqual(
      expect.arrayContaining([
        "telegram.dm_policy",
        "telegram.allow_from",
        "heartbeat.target",
        "pairing:telegram:222222222",
      ]),
    );
    const text = readFileSync(join(open.into, "config.yaml"), "utf8");
    expect(text).not.toContain("666666666");
    expect(configOf(open.into).channels.telegram.dm_policy).toBe("pairing");
  });

  it("finds the owner only where openclaw.json names exactly one, on a closed door", () => {
    const tg = (t: Record<string, unknown>, commands: unknown[] = []): Record<string, unknown> => ({
      channels: { telegram: t },
      commands: { ownerAllowFrom: commands },
    });
    expect([...ownerIds(tg({ allowFrom: ["tg:111"] })).keys()]).toEqual(["telegram:111"]);
    expect([...ownerIds(tg({ allowFrom: ["111", "telegram:111"] })).keys()]).toEqual(["telegram:111"]);
    for (const allowFrom of [["*"], ["111", "*"], ["@robin", "111"], ["111", "222"], []])
      expect([...ownerIds(tg({ allowFrom })).keys()], JSON.stringify(allowFrom)).toEqual([]);
    expect([...ownerIds(tg({ enabled: true }, ["telegram:5", "telegram:6"])).keys()]).toEqual([]);
    expect([...ownerIds(tg({ dmPolicy: "open", allowFrom: ["111"] }, ["telegram:5"])).keys()]).toEqual([]);
    expect([...ownerIds(tg({ enabled: true }, ["discord:5", "telegram:7"])).keys()]).toEqual(["telegram:7"]);
  });
});

describe("familiar import openclaw at a terminal", () => {
  it("asks once, listing every item, and takes what the owner says yes to (real CLI, pseudo-terminal)", async () => {
    const { from, into } = setup();
    const r = await runCliInTerminal(
      ["import", "openclaw", "--from", from, "--into", into],
      join(from, ".."),
      // Per group: no to the skill's script, yes to the group.
      (printed) =>
        /decide per group\] $/.test(printed)
          ? "g"
          : /Take the 1 of skills\? \[y\/N\] $/.test(printed)
            ? "n"
            : /Take the 1 of channels\? \[y\/N\] $/.test(printed)
              ? "y"
              : undefined,
    );
    const out = r.stdout;
    expect(r.code, out).toBe(0);
    expect(out).toContain("each is left out unless you say yes:");
    expect(out).toContain("[telegram.groups] telegram groups: [-1001234567890]");
    expect(out).toContain("[skill-file:tide-check/scripts/tides.sh] skills/tide-check/scripts/tides.sh");
    expect(out).not.toContain(NOT_ASKED);
    expect(configOf(into).channels.telegram.groups).toEqual(["-1001234567890"]);
    expect(existsSync(join(into, "workspace", "skills", "tide-check", "scripts", "tides.sh"))).toBe(false);
  }, 120_000);

  it("shows each item as one visible line and takes nothing on an empty answer", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (b: Buffer) => (shown += b.toString()));
    const asked = askConsent(
      [
        {
          group: "channels",
          key: "telegram.groups",
          text: "groups [\u001b]52;c;ZXZpbA==\u0007]\nsecond line",
        },
      ],
      { input, output },
    );
    input.end("\n");
    expect(await asked).toEqual([]);
    expect(shown).not.toContain("\u001b");
    expect(shown).not.toContain("\u0007");
    expect(shown.split("\n").filter((l) => l.includes("[telegram.groups]"))).toHaveLength(1);
  });
});
