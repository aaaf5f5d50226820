import { describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { modelChoiceProblem } from "./model-choice.js";

const cfg = (models: Record<string, unknown>, agents: Record<string, unknown> = {}) =>
  configFromObject({ timezone: "UTC", models, agents }, "/tmp");

describe("modelChoiceProblem", () => {
  const two = cfg(
    {
      providers: {
        openai: { base_url: "https://api.openai.com/v1", models: { "gpt-4o": {} } },
        local: { base_url: "http://127.0.0.1:11434/v1" },
      },
      primary: "openai/gpt-4o",
      fallbacks: ["openai/gpt-4o-mini"],
    },
    { helper: { model: "local/qwen2.5:14b" } },
  );

  it("refuses an unknown provider with the configured providers and their known models", () => {
    expect(modelChoiceProblem(two, "opnai/gpt-4o")).toBe(
      'unknown provider "opnai"; configured: local (qwen2.5:14b), openai (gpt-4o, gpt-4o-mini)',
    );
  });

  it("refuses a model outside a provider's catalogue, naming the known ones and where to add it", () => {
    expect(modelChoiceProblem(two, "openai/gpt-5")).toBe(
      'unknown model "gpt-5" for provider "openai"; known: gpt-4o, gpt-4o-mini ' +
        "(add it under models.providers.openai.models to use it)",
    );
    expect(modelChoiceProblem(two, "openai/gpt-4o-mini")).toBeUndefined();
  });

  it("accepts any model of a provider without a catalogue (only the provider can tell)", () => {
    expect(modelChoiceProblem(two, "local/llama3.1")).toBeUndefined();
  });

  it("refuses anything but echo/echo when no provider is configured, and malformed refs", () => {
    const none = cfg({});
    expect(modelChoiceProblem(none, "openai/gpt-4o")).toContain("no model provider is configured");
    expect(modelChoiceProblem(none, "echo/echo")).toBeUndefined();
    expect(modelChoiceProblem(two, "echo/other")).toBe("the echo provider has one model: echo/echo");
    expect(modelChoiceProblem(two, "gpt-4o")).toMatch(/^expected <provider>\/<model>/);
  });
});
