/**
 * Issue 34 item 6: every agent's model meets the same 16K/32K context-window rules, whichever source
 * defined it — config.yaml, a workspace agent file (real files in a temp workspace, read by the
 * catalog's FileAgentSource) or the API (a real SQLite file, ApiAgentStore). Only the place named in a
 * finding differs. A planted link in the agents folder is never read for it.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { FileAgentSource } from "../../internal/agent/catalog/file-agents.js";
import { ApiAgentStore } from "../../internal/agent/catalog/api-agents.js";
import { AgentWindowWatch, sourceWindowFindings } from "../../internal/agent/catalog/agent-windows.js";
import { agentSchema } from "../../internal/config/schema.js";
import { createLogger } from "../../internal/log/logger.js";
import { contextWindowFindings, resolveContextWindow } from "../../internal/models/context-window.js";
import { createTestCore, type TestCore } from "../helpers/core.js";

const cores: TestCore[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of cores.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function models(window: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    providers: {
      p: {
        base_url: "http://127.0.0.1:1/v1",
        models: { big: { context_window: 128_000 }, m: { context_window: window } },
      },
    },
    primary: "p/big",
    ...extra,
  };
}

/** A core whose config has agent `c` on p/m, a workspace file agent `w` and an API agent `a` on it. */
function threeSources(window: number): { core: TestCore; files: FileAgentSource; api: ApiAgentStore } {
  const core = createTestCore({ models: models(window), agents: { c: { model: "p/m" } } });
  cores.push(core);
  const dir = join(core.ctx.config().workspace, "agents");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "w.yaml"), "name: w\nmodel: p/m\n");
  const files = new FileAgentSource(() => core.ctx.config(), core.ctx.logger);
  files.load();
  expect(files.errors()).toEqual([]);
  const api = new ApiAgentStore(core.db);
  api.create("a", agentSchema.parse({ model: "p/m" }));
  return { core, files, api };
}

describe("the same window rules for config.yaml, workspace and API agents", () => {
  for (const [window, level] of [
    [8_000, "error"],
    [15_999, "error"],
    [16_000, "warning"],
    [20_000, "warning"],
    [31_999, "warning"],
  ] as const)
    it(`${window} tokens: a ${level} for each source, with the same message and its own place`, () => {
      const { core, files, api } = threeSources(window);
      const cfg = core.ctx.config();
      const config = contextWindowFindings(cfg);
      const others = sourceWindowFindings(cfg, [...files.list(), ...api.list()]);
      expect(config.map((f) => f.path)).toEqual(["agents.c.model"]);
      expect(others.map((f) => f.path)).toEqual(["agents/w.yaml (workspace) model", "API agent a model"]);
      for (const f of [...config, ...others]) {
        expect(f.level).toBe(level);
        expect(f.message).toBe(config[0]!.message);
        expect(f).toMatchObject({ model: "p/m", tokens: window });
      }
      expect(config[0]!.message).toBe(
        level === "error"
          ? `expected a model with a context window of at least 16000 tokens, got p/m with ${window} (models.providers.p.models.m.context_window); the daemon would refuse every turn on it`
          : `p/m has a context window of ${window} tokens (models.providers.p.models.m.context_window), under 32000: it works, but compaction will run often`,
      );
    });

  it("32,000 tokens: nothing for any source", () => {
    const { core, files, api } = threeSources(32_000);
    const cfg = core.ctx.config();
    expect(contextWindowFindings(cfg)).toEqual([]);
    expect(sourceWindowFindings(cfg, [...files.list(), ...api.list()])).toEqual([]);
  });

  it("an agent's own context_window counts for its default model and fallbacks, named where it is set", () => {
    const core = createTestCore({
      models: {
        providers: { p: { base_url: "http://127.0.0.1:1/v1" } },
        primary: "p/unstated",
        fallbacks: ["p/other"],
      },
      agents: { c: { context_window: 8_000 } },
    });
    cores.push(core);
    const dir = join(core.ctx.config().workspace, "agents");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "w.yaml"), "name: w\ncontext_window: 8000\n");
    const files = new FileAgentSource(() => core.ctx.config(), core.ctx.logger);
    files.load();
    const api = new ApiAgentStore(core.db);
    api.create("a", agentSchema.parse({ context_window: 20_000 }));
    const cfg = core.ctx.config();
    const found = [
      ...contextWindowFindings(cfg),
      ...sourceWindowFindings(cfg, [...files.list(), ...api.list()]),
    ];
    expect(found.map((f) => [f.level, f.path, f.model])).toEqual([
      ["error", "agents.c", "p/unstated"],
      ["error", "agents.c", "p/other"],
      ["error", "agents/w.yaml (workspace)", "p/unstated"],
      ["error", "agents/w.yaml (workspace)", "p/other"],
      ["warning", "API agent a", "p/unstated"],
      ["warning", "API agent a", "p/other"],
    ]);
    expect(found[2]!.message).toContain(
      "got p/unstated with 8000 (agents/w.yaml (workspace) context_window)",
    );
    expect(found[4]!.message).toContain("(API agent a context_window)");
    // The run time resolves the same number (the router and the compactor pass the agent's own window).
    expect(resolveContextWindow(cfg, "p/unstated", { id: "w", context_window: 8_000 })).toBe(8_000);
  });

  it("says nothing while no provider is configured (the echo model answers every turn)", () => {
    // A model naming a provider that is not configured is a config error now; a window alone is not.
    const core = createTestCore({ agents: { c: { context_window: 8_000 } } });
    cores.push(core);
    const api = new ApiAgentStore(core.db);
    api.create("a", agentSchema.parse({ context_window: 8_000 }));
    expect(contextWindowFindings(core.ctx.config())).toEqual([]);
    expect(sourceWindowFindings(core.ctx.config(), api.list())).toEqual([]);
  });

  it("never reads a planted link in the agents folder", () => {
    const core = createTestCore({ models: models(8_000) });
    cores.push(core);
    const outside = mkdtempSync(join(tmpdir(), "familiar-outside-"));
    dirs.push(outside);
    writeFileSync(join(outside, "evil.yaml"), "name: evil\nmodel: p/m\n");
    const dir = join(core.ctx.config().workspace, "agents");
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(outside, "evil.yaml"), join(dir, "evil.yaml"));
    const files = new FileAgentSource(() => core.ctx.config(), core.ctx.logger);
    files.load();
    expect(files.errors().map((e) => e.path)).toEqual([join(dir, "evil.yaml")]);
    expect(sourceWindowFindings(core.ctx.config(), files.list())).toEqual([]);
  });
});

describe("AgentWindowWatch", () => {
  it("logs a workspace agent's finding once while it persists, and again after a fix and a relapse", () => {
    const lines: string[] = [];
    const logger = createLogger({
      destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
      pretty: false,
    });
    const core = createTestCore({ models: models(20_000) });
    cores.push(core);
    const dir = join(core.ctx.config().workspace, "agents");
    mkdirSync(dir, { recursive: true });
    const files = new FileAgentSource(() => core.ctx.config(), logger);
    const watch = new AgentWindowWatch(() => core.ctx.config(), logger, [files]);
    const ours = (): string[] => lines.filter((l) => l.includes("agents/w.yaml (workspace) model"));
    writeFileSync(join(dir, "w.yaml"), "name: w\nmodel: p/m\n");
    files.load();
    watch.check();
    expect(ours()).toHaveLength(1);
    expect(JSON.parse(ours()[0]!)).toMatchObject({
      level: "warn",
      key: "agents/w.yaml (workspace) model",
      model: "p/m",
      contextWindow: 20_000,
      msg: "agents/w.yaml (workspace) model: p/m has a context window of 20000 tokens (models.providers.p.models.m.context_window), under 32000: it works, but compaction will run often",
    });
    watch.check();
    expect(ours()).toHaveLength(1);
    writeFileSync(join(dir, "w.yaml"), "name: w\nmodel: p/big\n");
    files.load();
    watch.check();
    expect(ours()).toHaveLength(1);
    writeFileSync(join(dir, "w.yaml"), "name: w\nmodel: p/m\n");
    files.load();
    watch.check();
    expect(ours()).toHaveLength(2);
  });
});
