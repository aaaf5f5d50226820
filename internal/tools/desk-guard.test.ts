/**
 * The desk fails closed when it cannot be compared whole: a flood of entries hiding a planted file is
 * moved away as a whole, never passed (real files; the sandbox's part is test/security/desk-attacks).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../log/logger.js";
import { settleDesk, watchDesk } from "./desk-guard.js";
import type { ToolContext } from "./tool.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function ctx(asked: string[]): ToolContext {
  return {
    sessionKey: "k",
    sessionId: "s",
    agentId: "main",
    workspace: "/nonexistent",
    replyTarget: "test:owner",
    requestId: "r",
    depth: 0,
    logger: silentLogger(),
    requestApproval: async (req) => {
      asked.push(req.summary);
      return "denied";
    },
  };
}

describe("a desk too large to compare", () => {
  it("refuses a command before it runs", () => {
    const root = mkdtempSync(join(tmpdir(), "familiar-desk-"));
    dirs.push(root);
    for (let i = 0; i < 30; i++) writeFileSync(join(root, `f${i}.txt`), "x");
    expect(() => watchDesk(root, new Set(), 20)).toThrow(/more than 20 entries/);
  });

  it("moves a flood hiding a planted file away whole, and makes a fresh desk", async () => {
    const root = mkdtempSync(join(tmpdir(), "familiar-desk-"));
    dirs.push(root);
    const desk = join(root, "desk");
    const data = join(root, "data");
    mkdirSync(desk);
    const w = watchDesk(desk, new Set(), 50);
    // The command: many plain files first, the planted one among the last.
    mkdirSync(join(desk, "flood"));
    for (let i = 0; i < 80; i++) writeFileSync(join(desk, "flood", `${i}.txt`), "x");
    writeFileSync(join(desk, "flood", "zz-late.envrc"), "touch PWNED");
    writeFileSync(join(desk, ".envrc"), "touch PWNED");
    const asked: string[] = [];
    const r = await settleDesk(w, data, ctx(asked));
    expect(r.outcome?.note).toContain("too many to check: all of it was moved to");
    expect(readdirSync(desk)).toEqual([]);
    const [moved] = readdirSync(join(data, "quarantine"));
    expect(existsSync(join(data, "quarantine", moved ?? "", ".envrc"))).toBe(true);
    expect(asked).toEqual([]);
  });
});
