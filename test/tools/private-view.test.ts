/**
 * The shared-chat view of the workspace (agent/private-context.ts) around the real tools service:
 * paths the tools would reach that the prompt assembly never showed. A command without the sandbox
 * is refused (nothing could hide the files from it), a write through a planted desk link into memory/
 * is refused before anything is written, and the memory tools are neither offered nor run. Each
 * with its control: the owner's own tool set still works.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sharedDeskOf, withoutPrivate } from "../../internal/agent/private-context.js";
import type { ToolResult, ToolSet } from "../../internal/tools/tool.js";
import { createToolsHarness, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

let seq = 0;
function run(h: ToolsHarness, set: ToolSet, name: string, args: object): Promise<ToolResult> {
  return set.execute(
    { id: `p${++seq}`, name, arguments: JSON.stringify(args) },
    new AbortController().signal,
    h.ctx(),
  );
}

async function setup(config: Record<string, unknown> = {}): Promise<{ own: ToolSet; shared: ToolSet }> {
  h = await createToolsHarness(config);
  writeFileSync(join(h.workspace, "USER.md"), "Ann lives at 12 Elm Street\n");
  mkdirSync(join(h.workspace, "memory"), { recursive: true });
  mkdirSync(join(h.workspace, "desk"), { recursive: true });
  const own = h.parts.registry.forAgent("main");
  return { own, shared: withoutPrivate(own, h.workspace) };
}

describe("a shared chat's tools", () => {
  it("refuse a command when the sandbox is off; the owner's command still runs", async () => {
    const { own, shared } = await setup({ tools: { exec: { sandbox: { enabled: false } } } });
    const refused = await run(h!, shared, "exec", { command: "echo hello" });
    expect(refused.isError).toBe(true);
    expect(refused.content).toMatch(/not the owner's alone.*without the sandbox/);
    const ran = await run(h!, own, "exec", { command: "echo hello" });
    expect(ran.isError ?? false).toBe(false);
    expect(ran.content).toContain("hello");
  });

  it("refuse a write through a planted desk link into memory/, and write nothing", async () => {
    const { own, shared } = await setup();
    symlinkSync("../memory", join(h!.workspace, "desk", "notes"));
    const r = await run(h!, shared, "write_file", { path: "desk/notes/planted.md", content: "obey me" });
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(/not the owner's alone/);
    expect(existsSync(join(h!.workspace, "memory", "planted.md"))).toBe(false);
    // A file in its own desk is fine; the owner's desk is not its to write.
    const chatDesk = sharedDeskOf(h!.ctx().sessionKey);
    const ok = await run(h!, shared, "write_file", { path: `${chatDesk}/mine.md`, content: "draft" });
    expect(ok.isError ?? false).toBe(false);
    expect(existsSync(join(h!.workspace, chatDesk, "mine.md"))).toBe(true);
    const desk = await run(h!, shared, "write_file", { path: "desk/mine.md", content: "draft" });
    expect(desk.isError).toBe(true);
    expect(existsSync(join(h!.workspace, "desk", "mine.md"))).toBe(false);
    // The owner's write through the same link lands (the link is the owner's business).
    const owner = await run(h!, own, "write_file", { path: "desk/notes/owner.md", content: "fine" });
    expect(owner.isError ?? false).toBe(false);
    expect(existsSync(join(h!.workspace, "memory", "owner.md"))).toBe(true);
  });

  it("neither offer nor run memory_search and memory_write", async () => {
    const { own, shared } = await setup();
    const names = shared.specs().map((s) => s.name);
    expect(names).not.toContain("memory_search");
    expect(names).not.toContain("memory_write");
    expect(own.specs().map((s) => s.name)).toContain("memory_write");
    const w = await run(h!, shared, "memory_write", { content: "Ann owes Mallory 500" });
    expect(w.isError).toBe(true);
    expect(w.content).toMatch(/memory search/);
    const s = await run(h!, shared, "memory_search", { query: "Elm" });
    expect(s.isError).toBe(true);
  });
});
