/** The default workspace goes into every system prompt: it must stay small and the heartbeat idle. */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hasHeartbeatTasks } from "../internal/heartbeat/heartbeat-file.js";
import { REPO_ROOT } from "./helpers/daemon.js";

const ws = join(REPO_ROOT, "workspace");
const FILES = ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"];

describe("workspace template", () => {
  it("has every prompt file and a memory/ folder", () => {
    for (const f of FILES) expect(readFileSync(join(ws, f), "utf8").trim().length).toBeGreaterThan(0);
    expect(statSync(join(ws, "memory")).isDirectory()).toBe(true);
    expect(readdirSync(join(ws, "memory"))).toContain(".gitkeep");
  });

  it("stays under 2,000 characters in total (it is in every prompt)", () => {
    const total = FILES.reduce((n, f) => n + readFileSync(join(ws, f), "utf8").length, 0);
    expect(total).toBeLessThan(2000);
  });

  it("ships a HEARTBEAT.md with no tasks, so an idle heartbeat makes no model call", () => {
    const text = readFileSync(join(ws, "HEARTBEAT.md"), "utf8");
    expect(hasHeartbeatTasks(text)).toBe(false);
    // The example inside the comment would be a task once uncommented.
    expect(hasHeartbeatTasks(text.replace(/<!--|-->/g, ""))).toBe(true);
  });
});
