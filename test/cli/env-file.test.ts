/**
 * Issue 47, secrets: an owner-only `.env` beside config.yaml (or in the data dir) fills `${VAR}`, the
 * daemon picks up its edits on reload, a file others can read or another user owns is refused naming
 * the file and its mode or owner, and `backup` and `doctor` go on when a variable is unset, saying
 * what they skipped. Real files, the real daemon and CLI, the fake model provider.
 */
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadConfigFile } from "../../internal/config/load.js";
import { allMigrations } from "../../internal/daemon/migrations.js";
import { openDatabase } from "../../internal/store/db.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { runCli, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";

const dirs: string[] = [];
let llm: FakeOpenAI | undefined;
let daemon: DaemonProcess | undefined;
afterAll(async () => {
  await daemon?.cleanup();
  await llm?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function instance(): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), "familiar-envfile-"));
  dirs.push(dir);
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      "data_dir: ./data",
      "workspace: ./workspace",
      "timezone: UTC",
      "models:",
      "  providers:",
      "    openai:",
      "      base_url: http://127.0.0.1:9/v1",
      "      api_key: ${FAMILIAR_T_KEY}",
      "  primary: openai/gpt-4o-mini",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  return { dir, config };
}

function api(loaded: ReturnType<typeof loadConfigFile>): string | undefined {
  return loaded.config.models.providers.openai?.api_key;
}

describe("the owner's .env", () => {
  it("fills ${VAR} from beside config.yaml or the data dir; the process environment wins", () => {
    const { dir, config } = instance();
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", ".env"), "FAMILIAR_T_KEY=from-data-dir\n", { mode: 0o600 });
    expect(api(loadConfigFile(config, {}))).toBe("from-data-dir");
    writeFileSync(
      join(dir, ".env"),
      '# the owner\'s keys\nexport FAMILIAR_T_KEY="sk-beside # not a comment"\nOTHER=x # comment\n',
      { mode: 0o600 },
    );
    const loaded = loadConfigFile(config, {});
    expect(api(loaded)).toBe("sk-beside # not a comment");
    expect(loaded.envFiles).toEqual([join(dir, ".env"), join(dir, "data", ".env")]);
    expect(api(loadConfigFile(config, { FAMILIAR_T_KEY: "from-shell" }))).toBe("from-shell");
    // Never into the process environment: no child process inherits them.
    expect(process.env.FAMILIAR_T_KEY).toBeUndefined();
  });

  it("a .env others can read, or another user's, is refused naming the file and its mode or owner", () => {
    const { dir, config } = instance();
    const env = join(dir, ".env");
    writeFileSync(env, "FAMILIAR_T_KEY=sk-x\n", { mode: 0o600 });
    chmodSync(env, 0o644);
    expect(() => loadConfigFile(config, {})).toThrow(
      `${env}: refused: group or others can read or write it (mode 0644); run chmod 600 ${env}`,
    );
    chmodSync(env, 0o600);
    chownSync(env, 65534, 65534);
    expect(() => loadConfigFile(config, {})).toThrow(`${env}: refused: owned by uid 65534, not by you`);
  });

  it("the daemon picks up a changed .env on reload", async () => {
    llm = await startFakeOpenAI({ apiKey: "sk-new" });
    llm.setHandler(() => ({ text: "hello from the new key" }));
    const dir = mkdtempSync(join(tmpdir(), "familiar-envfile-daemon-"));
    dirs.push(dir);
    writeFileSync(join(dir, ".env"), "FAMILIAR_T_KEY=sk-old\n", { mode: 0o600 });
    daemon = await startDaemonProcess({
      dir,
      config: {
        models: {
          providers: { fake: { base_url: llm.baseUrl, api_key: "${FAMILIAR_T_KEY}" } },
          primary: "fake/m",
        },
      },
    });
    const d = daemon;
    const ask = async (): Promise<number> => {
      const r = await fetch(`${d.url}/v1/chat/completions`, {
        method: "POST",
        headers: d.headers(),
        body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "hi" }] }),
      });
      await r.text();
      return llm!.requests.filter((q) => q.headers.authorization === "Bearer sk-new").length;
    };
    expect(d.stdoutLines().join("\n")).toContain(`config variables read from ${join(dir, ".env")}`);
    expect(await ask()).toBe(0);
    writeFileSync(join(dir, ".env"), "FAMILIAR_T_KEY=sk-new\n", { mode: 0o600 });
    await vi.waitFor(() => expect(d.stdoutLines().join("\n")).toMatch(/config reloaded \([^)]*models/), {
      timeout: 20_000,
      interval: 50,
    });
    expect(await ask()).toBe(1);
    expect(d.stdoutLines().join("\n")).not.toContain("sk-new");
  }, 90_000);

  it("backup copies the config byte for byte with a variable unset, and says what it skipped", async () => {
    const { dir, config } = instance();
    openDatabase(join(dir, "data"), { migrations: allMigrations }).close();
    const r = await runCli(["backup", "--config", config], dir);
    expect(r.stderr).toContain(
      "skipped (not needed to copy the config): ${FAMILIAR_T_KEY} at models.providers.openai.api_key is not set",
    );
    expect(r.code).toBe(0);
    const backups = join(dir, "data", "backups");
    const snap = readdirSync(backups).find((f) => !f.startsWith("."))!;
    expect(readFileSync(join(backups, snap, "config.yaml"), "utf8")).toBe(readFileSync(config, "utf8"));
  }, 60_000);

  it("doctor goes past an unset variable, checks the rest and names what it skipped", async () => {
    const { dir, config } = instance();
    const r = await runCli(["doctor", "--config", config], dir);
    expect(r.stdout).toContain(
      "warn  provider openai: skipped: ${FAMILIAR_T_KEY} (models.providers.openai.api_key) is not set here",
    );
    for (const name of ["config", "data_dir", "workspace", "gateway", "sandbox"])
      expect(r.stdout).toMatch(new RegExp(`^\\w+\\s+${name}: `, "m"));
    expect(r.stdout).not.toContain("no provider configured");
  }, 60_000);
});
