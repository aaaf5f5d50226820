/**
 * REQ-401: the context-window guard uses the spec's numbers (16,000 minimum, 32,000 warning), and a
 * model below the minimum is reported by `familiar config check` and `familiar doctor` (the real CLI
 * in a child process) instead of being accepted and then refused on every turn.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configFromObject } from "../internal/config/load.js";
import {
  CONTEXT_WINDOW_MINIMUM,
  CONTEXT_WINDOW_WARNING,
  contextWindowProblems,
  validateContextWindow,
} from "../internal/models/context-window.js";
import { childEnv, cliCommand, freePort } from "./helpers/daemon.js";

function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, ...pre] = cliCommand();
  const child = spawn(cmd!, [...pre, ...args], { cwd, env: childEnv({}), stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  return new Promise((res) => child.on("close", (code) => res({ code, stdout, stderr })));
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function models(window: number): string {
  return [
    "models:",
    "  providers:",
    `    p: {base_url: "http://127.0.0.1:1/v1", models: {small: {context_window: ${window}}}}`,
    "  primary: p/small",
    "",
  ].join("\n");
}

describe("context-window guard (REQ-401)", () => {
  it("uses the spec's thresholds: 16,000 is accepted, 15,999 refused", () => {
    expect(CONTEXT_WINDOW_MINIMUM).toBe(16_000);
    expect(CONTEXT_WINDOW_WARNING).toBe(32_000);
    expect(() => validateContextWindow(16_000, { modelRef: "p/small" })).not.toThrow();
    expect(() => validateContextWindow(15_999, { modelRef: "p/small" })).toThrow(
      /below the minimum of 16000/,
    );
  });

  it("names every config key whose model the daemon would refuse", () => {
    const cfg = configFromObject(
      {
        timezone: "UTC",
        models: {
          providers: {
            p: {
              base_url: "http://127.0.0.1:1/v1",
              models: { ok: { context_window: 16_000 }, tiny: { context_window: 8_000 } },
            },
          },
          primary: "p/ok",
          fallbacks: ["p/tiny"],
        },
        agents: {
          coder: { model: "p/tiny" },
          narrow: { context_window: 4_000 },
          cli: { engine: "claude-cli", model: "p/tiny" },
        },
      },
      "/tmp",
    );
    expect(contextWindowProblems(cfg).map((p) => p.path)).toEqual([
      "models.fallbacks[0]",
      "agents.coder.model",
    ]);
    expect(contextWindowProblems(cfg)[0]!.message).toBe(
      "expected a model with a context window of at least 16000 tokens, got p/tiny with 8000 " +
        "(models.providers.p.models.tiny.context_window); the daemon would refuse every turn on it",
    );
  });

  it("config check accepts a 16,000-token model and reports a smaller one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-cw-"));
    dirs.push(dir);
    writeFileSync(join(dir, "config.yaml"), models(16_000));
    const ok = await cli(["config", "check"], dir);
    expect(ok.code, ok.stderr).toBe(0);
    writeFileSync(join(dir, "config.yaml"), models(12_000));
    const bad = await cli(["config", "check"], dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      "models.primary: expected a model with a context window of at least 16000 tokens, got p/small with 12000",
    );
  });

  it("doctor fails the config check for a model below the minimum", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-cw-"));
    dirs.push(dir);
    mkdirSync(join(dir, "workspace"));
    writeFileSync(join(dir, "config.yaml"), `gateway:\n  port: ${await freePort()}\n${models(12_000)}`);
    const r = await cli(["doctor"], dir);
    expect(r.code).toBe(1);
    const line = r.stdout.split("\n").find((l) => l.slice(6).startsWith("config:"));
    expect(line).toMatch(
      /^fail {2}config: models\.primary: expected a model with a context window of at least 16000/,
    );
  });
});
