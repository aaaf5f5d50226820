import { describe, expect, it } from "vitest";
import { formatCapabilities, matchCapabilities } from "./capabilities.js";
import { agentSchema } from "../../config/schema.js";
import type { AgentDef } from "../agents.js";

function agent(id: string, capabilities: { name: string; tags?: string[]; strength?: number }[]): AgentDef {
  return { ...agentSchema.parse({ capabilities }), id, source: "config" };
}

describe("matchCapabilities", () => {
  const agents = [
    agent("coder", [{ name: "code-generation", tags: ["python", "typescript"], strength: 0.9 }]),
    agent("writer", [{ name: "writing", tags: ["docs", "blog"], strength: 0.8 }]),
    agent("reviewer", [{ name: "code-review", tags: ["typescript"], strength: 0.5 }]),
    agent("plain", []),
  ];
  it("ranks by weighted overlap, highest first, only positive scores", () => {
    const r = matchCapabilities(agents, "Write typescript code for a CLI");
    expect(r.map((m) => m.agentId)).toEqual(["coder", "reviewer"]);
    expect(r[0]?.score).toBeGreaterThan(r[1]?.score ?? 0);
    expect(r[0]?.matched).toContain("typescript");
  });
  it("returns nothing when no agent matches", () => {
    expect(matchCapabilities(agents, "bake a cake")).toEqual([]);
  });
  it("formats capabilities for prompts", () => {
    expect(
      formatCapabilities([
        { name: "code-review", tags: ["go"], strength: 0.8 },
        { name: "x", tags: [], strength: 1 },
      ]),
    ).toBe("code-review [go] (0.8), x");
  });
});
