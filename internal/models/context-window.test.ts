import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { configFromObject } from "../config/load.js";
import { createLogger } from "../log/logger.js";
import {
  resolveContextWindow,
  resolveContextWindowDetailed,
  validateContextWindow,
  CONTEXT_WINDOW_FALLBACK,
} from "./context-window.js";
import { knownContextWindow } from "./known-models.js";
import { ModelError } from "./types.js";

const cfg = (o: Record<string, unknown>) => configFromObject({ timezone: "UTC", ...o }, "/tmp");
const providers = {
  p: {
    base_url: "http://127.0.0.1:1/v1",
    models: { "gpt-4o": { context_window: 64_000 }, custom: { context_window: 20_000 } },
  },
};

describe("resolveContextWindow", () => {
  it("per-model config beats the known-model table", () => {
    expect(resolveContextWindowDetailed(cfg({ models: { providers } }), "p/gpt-4o")).toEqual({
      tokens: 64_000,
      source: "model-config",
    });
  });
  it("known model default beats agent defaults", () => {
    const c = cfg({ models: { providers }, agents: { defaults: { context_window: 50_000 } } });
    expect(resolveContextWindowDetailed(c, "p/claude-sonnet-4-5")).toEqual({
      tokens: 200_000,
      source: "known-model",
    });
    expect(resolveContextWindow(c, "openrouter/meta-llama/llama-3.1-70b-instruct")).toBe(131_072);
    expect(resolveContextWindow(c, "ollama/qwen2.5:14b")).toBe(131_072);
  });
  it("agent > agents.defaults > models.context_window > 128K for unknown models", () => {
    const all = cfg({
      models: { providers, context_window: 40_000 },
      agents: { defaults: { context_window: 50_000 }, coder: { context_window: 60_000 } },
    });
    expect(resolveContextWindowDetailed(all, "p/mystery", "coder")).toEqual({
      tokens: 60_000,
      source: "agent",
    });
    expect(resolveContextWindowDetailed(all, "p/mystery", "main")).toEqual({
      tokens: 50_000,
      source: "agent-defaults",
    });
    const modelsOnly = cfg({ models: { providers, context_window: 40_000 } });
    expect(resolveContextWindowDetailed(modelsOnly, "p/mystery")).toEqual({
      tokens: 40_000,
      source: "models",
    });
    expect(resolveContextWindowDetailed(cfg({}), "p/mystery")).toEqual({
      tokens: CONTEXT_WINDOW_FALLBACK,
      source: "fallback",
    });
  });
  it("longest prefix wins in the known table", () => {
    expect(knownContextWindow("gpt-4o-2024-08-06")).toBe(128_000);
    expect(knownContextWindow("gpt-4-0613")).toBe(8_192);
    expect(knownContextWindow("o1-mini")).toBe(128_000);
    expect(knownContextWindow("totally-unknown")).toBeUndefined();
  });
});

describe("validateContextWindow", () => {
  it("refuses below 16K with a clear error and warns below 32K", () => {
    const lines: string[] = [];
    const logger = createLogger({
      destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
      pretty: false,
    });
    const err = (() => {
      try {
        validateContextWindow(8192, { logger, modelRef: "p/tiny" });
      } catch (e) {
        return e;
      }
    })() as ModelError;
    expect(err).toBeInstanceOf(ModelError);
    expect(err.code).toBe("MODEL_NOT_CONFIGURED");
    expect(err.message).toContain("p/tiny");
    expect(err.message).toContain("16000");
    validateContextWindow(20_000, { logger, modelRef: "p/custom" });
    expect(lines.some((l) => l.includes('"warn"') && l.includes("p/custom"))).toBe(true);
    lines.length = 0;
    validateContextWindow(128_000, { logger });
    expect(lines).toEqual([]);
  });
});
