import { describe, expect, it } from "vitest";
import { headersOf } from "./provider-transport.js";

describe("model request headers", () => {
  it("send the key, the SDK's organization and project variables, and let configured headers win", () => {
    const h = headersOf(
      "sk-1",
      { "X-Title": "familiar", "OpenAI-Project": "from-config" },
      {
        OPENAI_ORG_ID: "org-9",
        OPENAI_PROJECT_ID: "proj-env",
      },
    );
    expect(h).toMatchObject({
      authorization: "Bearer sk-1",
      "openai-organization": "org-9",
      "openai-project": "from-config",
      "x-title": "familiar",
      "content-type": "application/json",
    });
  });

  it("send neither variable when unset, and a placeholder key for local servers", () => {
    const h = headersOf(undefined, undefined, {});
    expect(h.authorization).toBe("Bearer no-key");
    expect(h).not.toHaveProperty("openai-organization");
    expect(h).not.toHaveProperty("openai-project");
  });
});
