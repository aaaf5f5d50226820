/** `media` config: off by default; a provider that is not configured is named with what was expected. */
import { describe, expect, it } from "vitest";
import { ConfigError, formatProblem } from "./errors.js";
import { configFromObject } from "./load.js";

function problems(obj: Record<string, unknown>): string[] {
  try {
    configFromObject(obj);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map(formatProblem);
  }
  return [];
}

describe("media config", () => {
  it("is off by default with sane limits", () => {
    const c = configFromObject({});
    expect(c.media.transcription.provider).toBeUndefined();
    expect(c.media.speech.provider).toBeUndefined();
    expect(c.media.transcription.max_bytes).toBe(20 * 1024 * 1024);
    expect(c.media.documents.max_chars).toBe(60_000);
  });

  it("names the key, what was expected and what was got", () => {
    const p = problems({
      models: { providers: { openai: { base_url: "https://api.openai.com/v1" } } },
      media: { transcription: { provider: "groq", language: "English" }, speech: { provider: "openai" } },
    });
    expect(p.some((x) => x.includes("media.transcription.provider") && x.includes('got "groq"'))).toBe(true);
    expect(p.some((x) => x.includes("media.transcription.language") && x.includes("ISO-639-1"))).toBe(true);
    expect(p.some((x) => x.includes("media.speech.provider"))).toBe(false);
  });
});
