/** The default workspace goes into every system prompt: it must stay small and the heartbeat idle. */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hasHeartbeatTasks } from "../internal/heartbeat/heartbeat-file.js";
import { REPO_ROOT } from "./helpers/daemon.js";

const ws = join(REPO_ROOT, "workspace");
/** What the template ships: the files the owner edits. The agent's own (MEMORY.md, memory/) are not shipped. */
const FILES = ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md"];

describe("workspace template", () => {
  it("has every prompt file the owner edits; the agent's own files are ignored by git", () => {
    for (const f of FILES) expect(readFileSync(join(ws, f), "utf8").trim().length).toBeGreaterThan(0);
    if (!existsSync(join(REPO_ROOT, ".git"))) return; // an unpacked package: no git to ask
    const agentFiles = [
      "workspace/MEMORY.md",
      "workspace/memory/2026-01-01.md",
      "workspace/inbox/telegram/2026-01-01/photo.jpg",
      "workspace/agents/helper.yaml",
    ];
    const ignored = execFileSync("git", ["check-ignore", ...agentFiles], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    });
    expect(ignored.trim().split("\n")).toEqual(agentFiles);
    const tracked = execFileSync("git", ["ls-files", "workspace"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(tracked).not.toMatch(/MEMORY\.md|workspace\/memory\//);
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
