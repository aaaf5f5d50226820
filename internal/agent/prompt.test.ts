/**
 * The system prompt: workspace files in order (each optional, size-capped, re-read when changed on
 * disk), the agent's own prompt, the skills list, the time in the configured zone and the origin; the
 * light prompt (heartbeat, cron) carries identity and HEARTBEAT.md only. Real files in a temp dir.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { agentSchema, type Config } from "../config/schema.js";
import type { AgentDef } from "./agents.js";
import { PromptBuilder, withContextNote } from "./prompt.js";
import { WorkspaceFiles } from "./workspace-files.js";

let ws: string;
let config: Config;
let now: number;
let builder: PromptBuilder;
const agent = (over: Partial<AgentDef> = {}): AgentDef => ({
  ...agentSchema.parse({}),
  id: "main",
  source: "config",
  ...over,
});
// 2026-11-23 09:30 UTC is 18:30 in Tokyo.
const AT = Date.UTC(2026, 10, 23, 9, 30);

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), "familiar-prompt-"));
  config = configFromObject(
    {
      timezone: "Asia/Tokyo",
      workspace: ws,
      log: { level: "silent" },
      agents: { defaults: { workspace_file_max_chars: 100 } },
    },
    join(ws, "config.yaml"),
  );
  now = 0;
  builder = new PromptBuilder(new WorkspaceFiles(1000, () => now));
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

describe("system prompt", () => {
  it("has the workspace files in order, capped, then the agent's prompt, skills, time and origin", () => {
    for (const f of ["MEMORY.md", "TOOLS.md", "USER.md", "IDENTITY.md", "SOUL.md", "AGENTS.md"])
      writeFileSync(join(ws, f), `content of ${f}`);
    writeFileSync(join(ws, "USER.md"), "u".repeat(150));
    writeFileSync(join(ws, "HEARTBEAT.md"), "heartbeat only");
    const p = builder.build({
      config,
      agent: agent({ system_prompt: "Speak like a sailor." }),
      skillsSection: "## Skills\n- weather: forecasts",
      toolNames: ["memory_write"],
      originLabel: "Telegram DM from Ann",
      now: AT,
    });
    const order = ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "MEMORY.md"].map((f) =>
      p.indexOf(`## ${f}\n`),
    );
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(p).toContain(`## USER.md\n${"u".repeat(100)}\n[... truncated at 100 characters]`);
    expect(p).not.toContain("heartbeat only");
    expect(p.indexOf("Speak like a sailor.")).toBeGreaterThan(p.indexOf("## MEMORY.md"));
    expect(p).toContain("## Skills\n- weather: forecasts");
    expect(p).toContain("memory_write");
    // No clock and no origin in the system prompt: it stays byte-identical from turn to turn.
    expect(p).not.toContain("Now: ");
    expect(p).not.toContain("Message from");
    expect(builder.build({ config, agent: agent(), originLabel: "Bob", now: AT + 3_600_000 })).toBe(
      builder.build({ config, agent: agent(), originLabel: "Ann", now: AT }),
    );
    expect(builder.volatile({ config, originLabel: "Telegram DM from Ann", now: AT })).toBe(
      "Now: Mon 2026-11-23 18:30 (Asia/Tokyo).\nMessage from: Telegram DM from Ann.",
    );
  });

  it("puts the context note just before the newest user message, after the older history", () => {
    const sys = { role: "system" as const, content: "rules" };
    const hist = [sys, { role: "user" as const, content: "hi" }];
    const note = { role: "system" as const, content: "[context] Now: x" };
    expect(withContextNote(hist, "Now: x")).toEqual([sys, note, hist[1]]);
    expect(hist).toHaveLength(2); // the input is not changed
    // Mid-turn (after tool calls) the note stays before the user message the turn answers.
    const turn = [
      ...hist,
      { role: "assistant" as const, content: "" },
      { role: "tool" as const, content: "r", tool_call_id: "c" },
    ];
    expect(withContextNote(turn, "Now: x")).toEqual([sys, note, ...turn.slice(1)]);
  });

  it("leaves out missing files, the skills list without one, and the memory hint without the tool", () => {
    const p = builder.build({ config, agent: agent(), now: AT });
    expect(p).not.toContain("## ");
    expect(p).not.toContain("memory_write");
  });

  it("the light prompt (heartbeat, cron) has identity and HEARTBEAT.md, no user files or skills", () => {
    writeFileSync(join(ws, "SOUL.md"), "soul text");
    writeFileSync(join(ws, "USER.md"), "user text");
    writeFileSync(join(ws, "HEARTBEAT.md"), "check the inbox");
    const p = builder.build({
      config,
      agent: agent(),
      light: true,
      skillsSection: "## Skills\n- weather: forecasts",
      toolNames: ["memory_write"],
      now: AT,
    });
    expect(p).toContain("## SOUL.md\nsoul text");
    expect(p).toContain("## HEARTBEAT.md\ncheck the inbox");
    expect(p).not.toContain("user text");
    expect(p).not.toContain("## Skills");
    expect(p).not.toContain("memory_write");
  });

  it("re-reads a workspace file when it changes on disk (checked at most once a second)", () => {
    writeFileSync(join(ws, "SOUL.md"), "first soul");
    expect(builder.build({ config, agent: agent(), now: AT })).toContain("first soul");
    writeFileSync(join(ws, "SOUL.md"), "second, longer soul");
    now += 500;
    expect(builder.build({ config, agent: agent(), now: AT })).toContain("first soul");
    now += 600;
    const p = builder.build({ config, agent: agent(), now: AT });
    expect(p).toContain("second, longer soul");
    expect(p).not.toContain("first soul");
  });
});
