/**
 * Issue 18, file tools: a symlink swapped in between a check and the open is never followed. Issue 43:
 * they write the desk and the mind only, and ask before a desk file another program would run or obey.
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
    const ws = join(h.workspace, "desk");
    mkdirSync(ws, { recursive: true });
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
        const r = await h.call("read_file", { path: "desk/d/secret.txt" });
        seen.add(r.isError ? "error" : r.content);
        const w = await h.call("write_file", { path: "desk/d/planted.txt", content: "x" });
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

describe("writes follow the zones: the desk, the mind, nothing else", () => {
  it("refuses the owner's files and the inbox, writes the desk and the mind", async () => {
    h = await createToolsHarness();
    writeFileSync(join(h.workspace, "owner-notes.md"), "mine\n");
    const outside = await h.call("write_file", { path: "owner-notes.md", content: "x" });
    expect(outside.isError).toBe(true);
    expect(outside.content).toContain("write your files under desk/");
    expect(readFileSync(join(h.workspace, "owner-notes.md"), "utf8")).toBe("mine\n");
    for (const path of [".envrc", "package.json", "proj/.git/config", "desk", "inbox/telegram/x.txt"]) {
      const r = await h.call("write_file", { path, content: "x" });
      expect(r.isError, path).toBe(true);
      expect(existsSync(join(h.workspace, path)), path).toBe(false);
    }
    expect((await h.call("write_file", { path: "desk/notes/todo.md", content: "x" })).isError).toBeFalsy();
    expect(
      (await h.call("write_file", { path: "desk/analyse.py", content: "print(1)" })).isError,
    ).toBeFalsy();
    expect(
      (await h.call("write_file", { path: "memory/2026-01-01.md", content: "- x" })).isError,
    ).toBeFalsy();
    expect(readFileSync(join(h.workspace, "desk/notes/todo.md"), "utf8")).toBe("x");
  });

  it("asks before a desk file another program runs or obeys, through a symlink too; writes when approved", async () => {
    h = await createToolsHarness();
    const harness = h;
    const desk = join(h.workspace, "desk");
    mkdirSync(join(desk, ".git"), { recursive: true });
    writeFileSync(join(desk, ".git/config"), "[core]\n");
    symlinkSync(".git/config", join(desk, "innocent.txt"));
    const decide = async (tool: string, args: unknown, answer: "approved" | "denied") => {
      const n = harness.channel.sent.length;
      const p = harness.call(tool, args);
      await harness.channel.waitFor(n + 1);
      const msg = harness.channel.sent[n];
      harness.parts.approvals.resolve(msg?.opts?.approvalId ?? "", answer);
      return { text: msg?.text ?? "", result: await p };
    };
    const a = await decide(
      "write_file",
      { path: "desk/.git/HEAD", content: "ref: refs/heads/main\n" },
      "denied",
    );
    expect(a.text).toContain("write_file desk/.git/HEAD");
    expect(a.result).toEqual({ isError: true, content: "the owner denied writing desk/.git/HEAD" });
    expect(existsSync(join(desk, ".git/HEAD"))).toBe(false);
    const b = await decide(
      "edit_file",
      { path: "desk/innocent.txt", old_text: "[core]", new_text: '[core]\n\tfsmonitor = "x"' },
      "denied",
    );
    expect(b.text).toContain("edit_file desk/.git/config");
    expect(readFileSync(join(desk, ".git/config"), "utf8")).toBe("[core]\n");
    for (const path of ["desk/package.json", "desk/a/b/c/d/GEMINI.md", "desk/node_modules/x/index.js"]) {
      const r = await decide("write_file", { path, content: "{}" }, "denied");
      expect(r.result.isError, path).toBe(true);
    }
    const c = await decide("write_file", { path: "desk/.envrc", content: "use nix\n" }, "approved");
    expect(c.result.isError).toBeFalsy();
    expect(readFileSync(join(desk, ".envrc"), "utf8")).toBe("use nix\n");
    // Ordinary files do not ask; with no channel to ask on, a held kind is refused.
    const n = h.channel.sent.length;
    expect((await h.call("write_file", { path: "desk/notes.md", content: "x" })).isError).toBeFalsy();
    const none = await h.call(
      "write_file",
      { path: "desk/.vscode/tasks.json", content: "{}" },
      { ctx: { replyTarget: undefined } },
    );
    expect(none.content).toContain("no channel to ask the owner on");
    expect(h.channel.sent).toHaveLength(n);
  });
});
