/**
 * The import against state the real OpenClaw writes, today: drive openclaw@2026.9.6 (Node 24, both
 * cached by `.ci/run` in `${XDG_CACHE_HOME:-~/.cache}/familiar/`) headless against the fake model and
 * the fake Telegram (test/helpers/openclaw-driver.ts), import its directory, and check the result: the
 * same personality files, the notes and skills, the cron job, the Telegram allowlist and pairing
 * approval (without `--accept`: they name only the owner), the conversations found by memory search, and the OpenClaw directory unchanged.
 * Without the install the test is skipped, and its name says why. Slow: a few minutes.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importOpenClawCommand } from "../../internal/cli/import.js";
import { configFromObject } from "../../internal/config/load.js";
import { allMigrations } from "../../internal/daemon/migrations.js";
import { MemoryIndex } from "../../internal/memory/memory-index.js";
import { openDatabase } from "../../internal/store/db.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "../fakes/telegram-server.js";
import { freePort } from "../helpers/daemon.js";
import {
  APPROVED_ID,
  driveOpenClaw,
  openclawInstall,
  OWNER_ID,
  TELEGRAM_TOKEN,
} from "../helpers/openclaw-driver.js";
import { hashTree, type ImportedConfig } from "./openclaw-fixture.js";

const install = openclawInstall();
const SKIP = "missing" in install ? ` (skipped: ${install.missing})` : "";

describe.skipIf("missing" in install)(`import from the real openclaw@2026.9.6${SKIP}`, () => {
  let llm: FakeOpenAI;
  let tg: FakeTelegramServer;
  let root: string;
  beforeAll(async () => {
    llm = await startFakeOpenAI();
    tg = await startFakeTelegram(TELEGRAM_TOKEN);
    root = mkdtempSync(join(tmpdir(), "familiar-openclaw-real-"));
  });
  afterAll(async () => {
    await tg.close();
    await llm.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("imports what the real program wrote", async () => {
    if ("missing" in install) return;
    const state = join(root, "state");
    await driveOpenClaw({
      ...install,
      stateDir: state,
      home: join(root, "home"),
      modelUrl: llm.baseUrl,
      telegram: tg,
      gatewayPort: await freePort(),
      // FAMILIAR_TEST_OPENCLAW_LOG=<file>: what each openclaw command printed, for a failure's post-mortem.
      ...(process.env.FAMILIAR_TEST_OPENCLAW_LOG
        ? { log: (l: string) => appendFileSync(process.env.FAMILIAR_TEST_OPENCLAW_LOG ?? "", `${l}\n`) }
        : {}),
    });
    const before = hashTree(state);
    const into = join(root, "familiar");
    let out = "";
    const code = importOpenClawCommand({
      from: state,
      into,
      config: "./config.yaml",
      // No --accept: what names only the owner (the allow list, the cron target, the pairing of the
      // owner openclaw.json names) is the owner's own and comes in; a group stays asked.
      out: (t) => (out += t),
      err: (t) => (out += t),
    });
    expect(code, out).toBe(0);
    expect(hashTree(state)).toBe(before);

    for (const f of [
      "SOUL.md",
      "USER.md",
      "MEMORY.md",
      "IDENTITY.md",
      "memory/2026-11-20.md",
      "skills/packing-list/SKILL.md",
    ])
      expect(readFileSync(join(into, "workspace", f), "utf8")).toBe(
        readFileSync(join(state, "workspace", f), "utf8"),
      );
    expect(out).toContain("? tide-check: needs review");
    const cfg = parse(readFileSync(join(into, "config.yaml"), "utf8")) as ImportedConfig;
    expect(cfg.channels.telegram.allow_from).toEqual([OWNER_ID]);
    expect(cfg.channels.telegram.token).toBe("${TELEGRAM_BOT_TOKEN}");
    expect(cfg.cron.jobs).toEqual([
      expect.objectContaining({
        id: "openclaw-morning-brief",
        cron: "30 7 * * 1-5",
        timezone: "Europe/Lisbon",
        deliver: `telegram:${OWNER_ID}`,
      }),
    ]);
    expect(out).toContain(`+ telegram user ${APPROVED_ID}: added`);
    expect(out).toMatch(
      /telegram allow_from: (added|updated) \(\[\d+\]; the owner's own: the only user openclaw\.json allows\)/,
    );
    // What grants power to others (the members of a group) is still asked, and a skill's script is
    // held as the desk would hold it; nothing else is.
    const asked = out
      .slice(out.indexOf("Needs your confirmation"))
      .split("\n")
      .filter((l) => l.startsWith("  ? ["));
    expect(asked).toContainEqual(expect.stringContaining("[telegram.groups]"));
    for (const l of asked) expect(l).toMatch(/^ {2}\? \[(telegram\.groups|skill-file:[^\]]+)\]/);

    // memory_search's index finds the fact the owner told OpenClaw.
    const config = configFromObject(
      { workspace: join(into, "workspace"), data_dir: join(into, "data"), timezone: "UTC" },
      into,
    );
    const db = openDatabase(config.data_dir, { migrations: allMigrations });
    const index = new MemoryIndex(db, () => config.workspace, { config: () => config });
    try {
      index.syncFiles();
      index.syncMessages();
      const hits = await index.search("Ilse birthday marzipan", { sources: "sessions" });
      expect(hits.map((h) => h.snippet).join("\n")).toContain("marzipan");
    } finally {
      await index.close();
      db.close();
    }

    // A second run duplicates nothing.
    let again = "";
    importOpenClawCommand({
      from: state,
      into,
      config: "./config.yaml",
      out: (t) => (again += t),
      err: (t) => (again += t),
    });
    expect(again).not.toMatch(/: (added|updated)/);
  }, 900_000);
});
