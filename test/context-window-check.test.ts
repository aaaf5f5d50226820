/**
 * REQ-401: the context-window guard uses the spec's numbers (16,000 minimum, 32,000 warning), and a
 * model below the minimum is reported by `familiar config check` and `familiar doctor` (the real CLI
 * in a child process) instead of being accepted and then refused on every turn.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configFromObject } from "../internal/config/load.js";
import {
  CONTEXT_WINDOW_MINIMUM,
  CONTEXT_WINDOW_WARNING,
  contextWindowProblems,
  contextWindowWarnings,
  validateContextWindow,
} from "../internal/models/context-window.js";
import { freePort, runCli } from "./helpers/daemon.js";
import { harnessConfig, startGatewayDaemon } from "./gateway/harness.js";

function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, cwd);
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

describe("the 32,000 warning covers every agent's model (issue 34)", () => {
  const cfgObj = (agentWindow: number) => ({
    timezone: "UTC",
    models: {
      providers: {
        p: {
          base_url: "http://127.0.0.1:1/v1",
          models: { big: { context_window: 128_000 }, small: { context_window: agentWindow } },
        },
      },
      primary: "p/big",
    },
    agents: { coder: { model: "p/small" } },
  });

  it("contextWindowWarnings names an agent's own model at 20,000 and at 31,999, not at 32,000", () => {
    for (const w of [20_000, 31_999])
      expect(contextWindowWarnings(configFromObject(cfgObj(w), "/tmp"))).toEqual([
        {
          path: "agents.coder.model",
          level: "warning",
          model: "p/small",
          tokens: w,
          agentId: "coder",
          message: `p/small has a context window of ${w} tokens (models.providers.p.models.small.context_window), under 32000: it works, but compaction will run often`,
        },
      ]);
    expect(contextWindowWarnings(configFromObject(cfgObj(32_000), "/tmp"))).toEqual([]);
    expect(contextWindowProblems(configFromObject(cfgObj(31_999), "/tmp"))).toEqual([]);
  });

  it("config check and doctor report it (exit 0 / warn)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-cw-"));
    dirs.push(dir);
    mkdirSync(join(dir, "workspace"));
    const yaml = [
      `gateway:\n  port: ${await freePort()}`,
      "models:",
      "  providers:",
      '    p: {base_url: "http://127.0.0.1:1/v1", models: {big: {context_window: 128000}, small: {context_window: 31999}}}',
      "  primary: p/big",
      "agents:",
      "  coder: {model: p/small}",
      "",
    ].join("\n");
    writeFileSync(join(dir, "config.yaml"), yaml);
    const check = await cli(["config", "check"], dir);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(
      "warning: agents.coder.model: p/small has a context window of 31999 tokens",
    );
    const doc = await cli(["doctor"], dir);
    const line = doc.stdout.split("\n").find((l) => l.includes("context windows:"));
    expect(line).toMatch(/^warn .*agents\.coder\.model: p\/small has a context window of 31999/);
  });
});

describe("on start and reload, the daemon logs every agent's small window", () => {
  it("an agent given a 20,000-token model by a reload is warned about", async () => {
    const h = await startGatewayDaemon({ config: {} });
    try {
      const cfg = harnessConfig(h.dir, h.port, h.fake.baseUrl);
      const models = cfg.models as { providers: Record<string, Record<string, unknown>> };
      models.providers.fake = { ...models.providers.fake, models: { small: { context_window: 20_000 } } };
      writeFileSync(h.configPath, JSON.stringify({ ...cfg, agents: { coder: { model: "fake/small" } } }));
      expect(h.daemon.config.reload()).toMatchObject({ ok: true });
      const warned = (): string | undefined =>
        h.logs().find((l) => l.includes("agents.coder.model") && l.includes("under 32000"));
      for (let i = 0; i < 200 && !warned(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(warned()).toContain('"level":"warn"');
    } finally {
      await h.close();
    }
  });
});
