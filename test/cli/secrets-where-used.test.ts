/**
 * Issue 35: secrets are resolved only where they are used. With the README's own
 * `api_key: ${OPENAI_API_KEY}` and the key only in the daemon's environment file, the commands that
 * call no provider or channel run from a shell without it (real CLI processes); a command that does
 * need it names the missing variable.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfigFile, missingEnvMessage } from "../../internal/config/load.js";
import { childEnv, cliCommand } from "../helpers/daemon.js";

const run = promisify(execFile);
let dir: string;
let cfg: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "familiar-secrets-"));
  cfg = join(dir, "config.yaml");
  writeFileSync(
    cfg,
    [
      "data_dir: ./data",
      "workspace: ./workspace",
      "models:",
      "  providers:",
      "    openai:",
      "      base_url: https://api.openai.com/v1",
      "      api_key: ${OPENAI_API_KEY}",
      "  primary: openai/gpt-4o-mini",
      "",
    ].join("\n"),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...pre] = cliCommand();
  try {
    const r = await run(cmd!, [...pre, ...args, "--config", cfg], {
      cwd: dir,
      env: childEnv(), // no OPENAI_API_KEY
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("secrets only where used", () => {
  it("the loader defers a missing variable and lists it, and stays strict by default", () => {
    const loaded = loadConfigFile(cfg, {}, { deferSecrets: true });
    expect(loaded.unresolvedEnv).toEqual([
      { path: "models.providers.openai.api_key", name: "OPENAI_API_KEY" },
    ]);
    expect(missingEnvMessage(loaded.unresolvedEnv[0]!)).toBe(
      "models.providers.openai.api_key: environment variable OPENAI_API_KEY is not set (export it, or put it in .env beside config.yaml, mode 0600)",
    );
    expect(() => loadConfigFile(cfg, {})).toThrow(/environment variable OPENAI_API_KEY is not set/);
    // A deferred reference that leaves an invalid value is still an error, naming the variable.
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "gateway:\n  port: ${FAMILIAR_TEST_PORT}\n");
    expect(() => loadConfigFile(bad, {}, { deferSecrets: true })).toThrow(
      /gateway\.port: environment variable FAMILIAR_TEST_PORT is not set/,
    );
  });

  it("usage, trace, sessions list, cron list and pairing list run without the provider key", async () => {
    for (const args of [["usage"], ["sessions", "list"], ["cron", "list"], ["pairing", "list"]]) {
      const r = await cli(args);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
    }
    const t = await cli(["trace", "no-such-request"]);
    expect(t.stderr).not.toContain("OPENAI_API_KEY");
    expect(t.stderr).toContain("no trace for request no-such-request");
  });

  it("a command that calls the provider names the missing variable (doctor skips that probe: issue 47)", async () => {
    const r = await cli(["doctor"]);
    expect(r.stdout).toContain("provider openai: skipped: ${OPENAI_API_KEY}");
    expect(r.stdout).toMatch(/^ok\s+data_dir: /m);
  });
});
