/**
 * Issue 18, file tools: a symlink swapped in between a check and the open is never followed, and
 * writes to files that make the owner's own tools run code (.git/config, .envrc...) ask first.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ownerToolFileReason } from "../../internal/tools/sandbox/owner-tool-files.js";
import { createToolsHarness, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
const cleanup: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of cleanup.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("file tools open beneath the workspace", () => {
  it("a folder swapped for a symlink out of the workspace mid-call is never followed", async () => {
    h = await createToolsHarness();
    const ws = h.workspace;
    const out = mkdtempSync(join(tmpdir(), "familiar-swap-"));
    cleanup.push(out);
    writeFileSync(join(out, "secret.txt"), "OUTSIDE");
    mkdirSync(join(ws, "d-real"));
    writeFileSync(join(ws, "d-real", "secret.txt"), "inside");
    symlinkSync(out, join(ws, "d-link"));
    renameSync(join(ws, "d-real"), join(ws, "d"));
    // Flip `d` between the real folder and the symlink on every turn of the event loop, so the swap
    // lands between the tool's steps (a check-then-open implementation reads OUTSIDE here).
    let real = true;
    let running = true;
    const flip = (): void => {
      if (!running) return;
      try {
        renameSync(join(ws, "d"), join(ws, real ? "d-real" : "d-link"));
        renameSync(join(ws, real ? "d-link" : "d-real"), join(ws, "d"));
        real = !real;
      } catch {
        /* a rename raced with nothing: try again next turn */
      }
      setImmediate(flip);
    };
    flip();
    const seen = new Set<string>();
    try {
      for (let i = 0; i < 300; i++) {
        const r = await h.call("read_file", { path: "d/secret.txt" });
        seen.add(r.isError ? "error" : r.content);
        const w = await h.call("write_file", { path: "d/planted.txt", content: "x" });
        seen.add(w.isError ? "error" : "wrote");
      }
    } finally {
      running = false;
    }
    expect(seen.has("OUTSIDE"), [...seen].join(" / ")).toBe(false);
    expect(seen.has("error"), [...seen].join(" / ")).toBe(true);
    expect(existsSync(join(out, "planted.txt"))).toBe(false);
  });

  it("a file swapped for a symlink is refused, and links inside the workspace still work", async () => {
    h = await createToolsHarness();
    const out = mkdtempSync(join(tmpdir(), "familiar-swap-"));
    cleanup.push(out);
    writeFileSync(join(out, "s.txt"), "OUTSIDE");
    mkdirSync(join(h.workspace, "a/b"), { recursive: true });
    writeFileSync(join(h.workspace, "a/b/f.txt"), "deep");
    symlinkSync("a/b", join(h.workspace, "rel-link"));
    symlinkSync("../a/b/f.txt", join(h.workspace, "a/up-link.txt"));
    symlinkSync("../../..", join(h.workspace, "a/b/too-far"));
    symlinkSync(join(out, "s.txt"), join(h.workspace, "abs-out.txt"));
    expect((await h.call("read_file", { path: "rel-link/f.txt" })).content).toBe("deep");
    expect((await h.call("read_file", { path: "a/up-link.txt" })).content).toBe("deep");
    expect((await h.call("list_dir", { path: "rel-link" })).content).toContain("f.txt");
    for (const path of ["a/b/too-far/etc/passwd", "abs-out.txt"]) {
      const r = await h.call("read_file", { path });
      expect(r.isError, path).toBe(true);
      expect(r.content, path).toMatch(/outside the workspace/);
    }
    const edit = await h.call("edit_file", { path: "abs-out.txt", old_text: "OUTSIDE", new_text: "x" });
    expect(edit.isError).toBe(true);
    expect(readFileSync(join(out, "s.txt"), "utf8")).toBe("OUTSIDE");
  });
});

describe("writes to files that make the owner's tools run code", () => {
  it("classifies .git, editor, direnv, npm and hook files, case-insensitively", () => {
    for (const p of [
      ".git/config",
      ".GIT/hooks/pre-commit",
      "sub/.git/config",
      ".git",
      ".envrc",
      "proj/.envrc",
      ".vscode/tasks.json",
      ".gitattributes",
      ".gitmodules",
      ".npmrc",
      ".husky/pre-commit",
      "mise.toml",
      ".idea/workspace.xml",
      ".\\.git\\config",
    ])
      expect(ownerToolFileReason(p), p).toBeDefined();
    for (const p of [
      "notes.md",
      "src/git.ts",
      "package.json",
      "Makefile",
      ".github/workflows/ci.yml",
      "gitconfig",
    ])
      expect(ownerToolFileReason(p), p).toBeUndefined();
  });

  it("asks before write_file / edit_file touch them, through a symlink too; writes when approved", async () => {
    h = await createToolsHarness();
    const harness = h;
    mkdirSync(join(h.workspace, ".git"));
    writeFileSync(join(h.workspace, ".git/config"), "[core]\n");
    symlinkSync(".git/config", join(h.workspace, "innocent.txt"));
    const decide = async (tool: string, args: unknown, answer: "approved" | "denied") => {
      const n = harness.channel.sent.length;
      const p = harness.call(tool, args);
      await harness.channel.waitFor(n + 1);
      const msg = harness.channel.sent[n];
      harness.parts.approvals.resolve(msg?.opts?.approvalId ?? "", answer);
      return { text: msg?.text ?? "", result: await p };
    };
    const a = await decide("write_file", { path: ".git/HEAD", content: "ref: refs/heads/main\n" }, "denied");
    expect(a.text).toContain("write_file .git/HEAD");
    expect(a.result).toEqual({ isError: true, content: "the owner denied writing .git/HEAD" });
    expect(existsSync(join(h.workspace, ".git/HEAD"))).toBe(false);
    const b = await decide(
      "edit_file",
      { path: "innocent.txt", old_text: "[core]", new_text: '[core]\n\tfsmonitor = "x"' },
      "denied",
    );
    expect(b.text).toContain("edit_file .git/config");
    expect(readFileSync(join(h.workspace, ".git/config"), "utf8")).toBe("[core]\n");
    const c = await decide("write_file", { path: ".envrc", content: "use nix\n" }, "approved");
    expect(c.result.isError).toBeFalsy();
    expect(readFileSync(join(h.workspace, ".envrc"), "utf8")).toBe("use nix\n");
    // Ordinary files do not ask; with no channel to ask on, a protected write is refused.
    const n = h.channel.sent.length;
    expect((await h.call("write_file", { path: "notes.md", content: "x" })).isError).toBeFalsy();
    const none = await h.call(
      "write_file",
      { path: ".vscode/tasks.json", content: "{}" },
      { ctx: { replyTarget: undefined } },
    );
    expect(none.content).toContain("no channel to ask the owner on");
    expect(h.channel.sent).toHaveLength(n);
  });
});
