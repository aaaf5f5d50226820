/**
 * The tool set of a shared chat (private-context.ts): the owner's private tools are neither offered
 * nor run, and the offered list is one array per array of the inner set, so a request body built
 * from it is serialized once (chat-request-body.ts caches by identity).
 */
import { describe, expect, it } from "vitest";
import type { ToolSpec } from "../models/types.js";
import { silentLogger } from "../log/logger.js";
import type { ToolContext, ToolSet } from "../tools/tool.js";
import { withoutPrivate } from "./private-context.js";

const spec = (name: string): ToolSpec => ({ name, description: name, parameters: { type: "object" } });

/** An inner set like the registry's: the same array until its tools change. */
function innerSet(): { set: ToolSet; ran: string[]; change(): void } {
  let specs = [spec("read_file"), spec("memory_search"), spec("web_fetch")];
  const ran: string[] = [];
  return {
    ran,
    change: () => {
      specs = [...specs, spec("exec")];
    },
    set: {
      specs: () => specs,
      execute: async (call) => {
        ran.push(call.name);
        return { content: `ran ${call.name}` };
      },
    },
  };
}

const ctx: ToolContext = {
  sessionKey: "agent:main:telegram:group:1",
  sessionId: "s1",
  agentId: "main",
  workspace: "/ws",
  requestId: "r1",
  depth: 0,
  logger: silentLogger(),
  requestApproval: async () => "denied",
};

describe("a shared chat's tool set", () => {
  it("offers no private tool, and hands out the same array until the inner set's changes", () => {
    const inner = innerSet();
    const first = withoutPrivate(inner.set, "/ws");
    const a = first.specs();
    expect(a.map((s) => s.name)).toEqual(["read_file", "web_fetch"]);
    expect(first.specs()).toBe(a);
    // The set is rebuilt for every turn; the array still is the same one (kept across turns).
    expect(withoutPrivate(inner.set, "/ws").specs()).toBe(a);
    inner.change();
    const b = first.specs();
    expect(b).not.toBe(a);
    expect(b.map((s) => s.name)).toEqual(["read_file", "web_fetch", "exec"]);
  });

  it("refuses memory_search and a read of MEMORY.md without running them, and runs the rest", async () => {
    const inner = innerSet();
    const set = withoutPrivate(inner.set, "/ws");
    const signal = new AbortController().signal;
    const c = ctx;
    const search = await set.execute(
      { id: "1", name: "memory_search", arguments: '{"query":"x"}' },
      signal,
      c,
    );
    const read = await set.execute(
      { id: "2", name: "read_file", arguments: '{"path":"./MEMORY.md"}' },
      signal,
      c,
    );
    const other = await set.execute(
      { id: "3", name: "read_file", arguments: '{"path":"skills/notes/SKILL.md"}' },
      signal,
      c,
    );
    expect(search.isError).toBe(true);
    expect(read.isError).toBe(true);
    expect(read.content).toMatch(/not the owner's alone/);
    expect(other.content).toBe("ran read_file");
    expect(inner.ran).toEqual(["read_file"]);
  });
});
