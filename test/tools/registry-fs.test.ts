import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../internal/tools/tool.js";
import { createToolsHarness, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
const outside: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of outside.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("tool registry", () => {
  it("validates arguments and names the bad field", async () => {
    h = await createToolsHarness();
    const r = await h.call("read_file", { path: 42 });
    expect(r.isError).toBe(true);
    expect(r.content).toBe("invalid arguments: path: expected string, got number");
    const missing = await h.call("read_file", {});
    expect(missing.content).toContain("path: expected string, got nothing");
    const bad = await h.call("read_file", "{not json");
    expect(bad.content).toMatch(/^invalid arguments: not valid JSON/);
    const unknown = await h.call("nope", {});
    expect(unknown.content).toMatch(/unknown tool "nope"; available: .*read_file/);
  });

  it("applies per-agent allow lists, groups and deny lists", async () => {
    h = await createToolsHarness({
      agents: {
        reader: { tools: ["group:fs", "current_time"] },
        nofs: { tools: { deny: ["group:fs", "exec"] } },
      },
    });
    // names(): every tool the agent may run, deferred ones (current_time) included.
    const reader = [...(h.parts.registry.forAgent("reader").names?.() ?? [])].sort();
    expect(reader).toEqual(["current_time", "edit_file", "list_dir", "read_file", "write_file"]);
    const nofs = h.parts.registry
      .forAgent("nofs")
      .specs()
      .map((s) => s.name);
    expect(nofs).toContain("web_fetch");
    expect(nofs).not.toContain("read_file");
    expect(nofs).not.toContain("exec");
    const r = await h.call("exec", { command: "pwd" }, { agent: "reader" });
    expect(r).toEqual({ isError: true, content: 'tool "exec" is not available to this agent' });
    // Overrides (agents defined outside config.yaml) win over config.
    expect(
      h.parts.registry
        .forAgent("reader", ["memory_*"])
        .specs()
        .map((s) => s.name)
        .sort(),
    ).toEqual(["memory_search", "memory_write"]);
    // Specs are JSON schema with the field descriptions.
    const spec = h.parts.registry
      .forAgent("main")
      .specs()
      .find((s) => s.name === "read_file");
    expect(spec?.parameters).toMatchObject({ type: "object", required: ["path"] });
  });

  it("caps results, turns throws and aborts into error results, and sees registered tools", async () => {
    h = await createToolsHarness({ tools: { max_result_chars: 300 } });
    h.parts.registry.register(
      defineTool({
        name: "big",
        group: "time",
        description: "big",
        schema: z.object({}),
        execute: async () => "x".repeat(5000),
      }),
    );
    h.parts.registry.register(
      defineTool({
        name: "boom",
        group: "time",
        description: "throws",
        schema: z.object({}),
        execute: async () => {
          throw new Error("kaput");
        },
      }),
    );
    h.parts.registry.register(
      defineTool({
        name: "hang",
        group: "time",
        description: "never ends",
        schema: z.object({}),
        execute: () => new Promise<string>(() => {}),
      }),
    );
    const big = await h.call("big", {});
    expect(big.content.length).toBeLessThanOrEqual(300);
    expect(big.content).toContain("[truncated: showing 300 of 5000 characters]");
    expect(await h.call("boom", {})).toEqual({ isError: true, content: "error: kaput" });
    const ac = new AbortController();
    const p = h.call("hang", {}, { signal: ac.signal });
    ac.abort();
    expect(await p).toEqual({ isError: true, content: "aborted" });
  });
});

describe("file tools", () => {
  it("writes, reads line ranges, edits and lists inside the workspace", async () => {
    h = await createToolsHarness();
    const ws = join(h.workspace, "desk");
    mkdirSync(ws, { recursive: true });
    expect(
      (await h.call("write_file", { path: "desk/notes/a.txt", content: "one\ntwo\nthree\nfour\n" })).content,
    ).toBe("wrote 19 bytes to desk/notes/a.txt");
    expect(readFileSync(join(ws, "notes/a.txt"), "utf8")).toBe("one\ntwo\nthree\nfour\n");
    const range = await h.call("read_file", { path: "desk/notes/a.txt", start_line: 2, end_line: 3 });
    expect(range.content).toBe("[desk/notes/a.txt lines 2-3 of 5]\ntwo\nthree");
    expect(
      (await h.call("edit_file", { path: "desk/notes/a.txt", old_text: "two", new_text: "2" })).isError,
    ).toBeFalsy();
    expect(readFileSync(join(ws, "notes/a.txt"), "utf8")).toBe("one\n2\nthree\nfour\n");
    const missing = await h.call("edit_file", { path: "desk/notes/a.txt", old_text: "zzz", new_text: "y" });
    expect(missing.isError).toBe(true);
    expect(missing.content).toContain("old_text was not found");
    writeFileSync(join(ws, "dup.txt"), "x x x");
    const amb = await h.call("edit_file", { path: "desk/dup.txt", old_text: "x", new_text: "y" });
    expect(amb.content).toContain("occurs 3 times");
    expect(
      (await h.call("edit_file", { path: "desk/dup.txt", old_text: "x", new_text: "y", replace_all: true }))
        .content,
    ).toContain("replaced 3");
    const list = await h.call("list_dir", { path: "desk", recursive: true });
    expect(list.content.split("\n")).toEqual(["dup.txt (5 bytes)", "notes/", "notes/a.txt (17 bytes)"]);
    const abs = await h.call("read_file", { path: join(ws, "dup.txt") });
    expect(abs.content).toBe("y y y");
    // A FIFO would block the read forever: refused at once.
    execFileSync("mkfifo", [join(ws, "pipe")]);
    expect(await h.call("read_file", { path: "desk/pipe" })).toEqual({
      isError: true,
      content: '"desk/pipe" is not a regular file',
    });
    expect((await h.call("write_file", { path: "desk/pipe", content: "x" })).content).toBe(
      '"desk/pipe" is not a regular file',
    );
  });

  it("refuses traversal, outside absolute paths and symlink escapes (also for new files)", async () => {
    h = await createToolsHarness();
    const ws = join(h.workspace, "desk");
    mkdirSync(ws, { recursive: true });
    const secretDir = mkdtempSync(join(tmpdir(), "familiar-outside-"));
    outside.push(secretDir);
    writeFileSync(join(secretDir, "secret.txt"), "top secret");
    symlinkSync(secretDir, join(ws, "escape"));
    symlinkSync(join(secretDir, "secret.txt"), join(ws, "secret-link.txt"));
    mkdirSync(join(ws, "sub"));

    const attempts: [string, unknown][] = [
      ["read_file", { path: "../outside.txt" }],
      ["read_file", { path: "desk/sub/../../x" }],
      ["read_file", { path: join(secretDir, "secret.txt") }],
      ["read_file", { path: "/etc/passwd" }],
      ["read_file", { path: "desk/escape/secret.txt" }],
      ["read_file", { path: "desk/secret-link.txt" }],
      ["write_file", { path: "desk/escape/new-file.txt", content: "pwned" }],
      ["write_file", { path: "desk/escape/deeper/new.txt", content: "pwned" }],
      ["edit_file", { path: "desk/secret-link.txt", old_text: "top", new_text: "no" }],
      ["list_dir", { path: "desk/escape" }],
      ["list_dir", { path: ".." }],
    ];
    for (const [tool, args] of attempts) {
      const r = await h.call(tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      expect(r.content).toMatch(/outside the workspace|not allowed|not on the desk/);
    }
    expect(existsSync(join(secretDir, "new-file.txt"))).toBe(false);
    expect(existsSync(join(secretDir, "deeper"))).toBe(false);
    expect(readFileSync(join(secretDir, "secret.txt"), "utf8")).toBe("top secret");
    // A dangling symlink is judged by its target: writing through it would create the target.
    symlinkSync(join(secretDir, "planted.txt"), join(ws, "dangling.txt"));
    symlinkSync(join(secretDir, "nodir", "x"), join(ws, "dangling-dir"));
    symlinkSync("loop-b", join(ws, "loop-a"));
    symlinkSync("loop-a", join(ws, "loop-b"));
    for (const [tool, args] of [
      ["write_file", { path: "desk/dangling.txt", content: "pwned" }],
      ["write_file", { path: "desk/dangling-dir/y.txt", content: "pwned" }],
      ["read_file", { path: "desk/dangling.txt" }],
    ] as const) {
      const r = await h.call(tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      expect(r.content).toMatch(/outside the workspace/);
    }
    expect(existsSync(join(secretDir, "planted.txt"))).toBe(false);
    expect(existsSync(join(secretDir, "nodir"))).toBe(false);
    const loop = await h.call("write_file", { path: "desk/loop-a", content: "x" });
    expect(loop.isError).toBe(true);
    expect(loop.content).toMatch(/symbolic links/);
    // A dangling symlink whose target is inside the workspace creates that target.
    symlinkSync(join(ws, "sub", "later.txt"), join(ws, "later-link.txt"));
    expect((await h.call("write_file", { path: "desk/later-link.txt", content: "ok" })).isError).toBeFalsy();
    expect(readFileSync(join(ws, "sub", "later.txt"), "utf8")).toBe("ok");
    // A symlink that stays inside the workspace is fine.
    writeFileSync(join(ws, "sub/real.txt"), "inside");
    symlinkSync(join(ws, "sub/real.txt"), join(ws, "ok-link.txt"));
    expect((await h.call("read_file", { path: "desk/ok-link.txt" })).content).toBe("inside");
  });
});
