/**
 * Issue 34 item 7: the MCP reference servers from npm (dev dependencies) against Familiar's client:
 * `@modelcontextprotocol/server-everything` over stdio and streamable HTTP (roots capability, an image
 * round trip through the agent loop to the model), `server-filesystem` (issue 46 item 2: its own folders
 * when no roots are configured, the configured roots when they are) and `server-memory`; a sandboxed server that cannot start says why and how to fix it, and granting the
 * missing path restarts it at once instead of at its next retry.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAgentHost } from "../../internal/agent/host.js";
import { createModelRouter } from "../../internal/models/router.js";
import { probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

const require = createRequire(import.meta.url);
const bin = (pkg: string, file = "dist/index.js"): string =>
  join(dirname(require.resolve(`${pkg}/package.json`)), file);
const server = (pkg: string, extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: [bin(pkg)],
  ...extra,
});
const sandbox = await probeSandbox();

let fake: FakeOpenAI;
let h: ToolsHarness | undefined;
const dirs: string[] = [];
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  fake.reset();
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const connected = (name: string) =>
  waitFor(() => h?.parts.mcp.health()[name]?.state === "connected", 30_000, `the ${name} server`);

describe("MCP reference servers", () => {
  it("server-everything: no roots capability unless roots are configured", async () => {
    h = await createToolsHarness(
      { mcp: { servers: { everything: server("@modelcontextprotocol/server-everything") } } },
      { start: true },
    );
    await connected("everything");
    const names = h.parts.registry
      .forAgent("main")
      .specs()
      .map((s) => s.name);
    expect(names).toContain("mcp__everything__get-sum");
    // Registered by the server only for a client with the roots capability.
    expect(names).not.toContain("mcp__everything__get-roots-list");
  });

  it("server-everything: the client declares the configured roots (the workspace, by its word)", async () => {
    h = await createToolsHarness(
      {
        mcp: {
          servers: {
            everything: server("@modelcontextprotocol/server-everything", { roots: ["workspace"] }),
          },
        },
      },
      { start: true },
    );
    await connected("everything");
    const names = h.parts.registry
      .forAgent("main")
      .specs()
      .map((s) => s.name);
    // Registered by the server only for a client with the roots capability.
    expect(names).toContain("mcp__everything__get-roots-list");
    const roots = await waitFor(
      async () => {
        const r = await h!.call("mcp__everything__get-roots-list", {});
        return r.content.includes("file://") ? r : undefined;
      },
      20_000,
      "the roots",
    );
    expect(roots!.content).toContain(pathToFileURL(h.workspace).href);
  });

  it("server-everything: an image from a tool reaches the model as an image", async () => {
    h = await createToolsHarness(
      {
        models: {
          providers: { f: { base_url: fake.baseUrl, api_key: "sk-test" } },
          primary: "f/m",
          max_retries: 0,
          timeout_s: 10,
        },
        mcp: { servers: { everything: server("@modelcontextprotocol/server-everything") } },
      },
      { start: true },
    );
    await connected("everything");
    const direct = await h.call("mcp__everything__get-tiny-image", {});
    expect(direct.images?.[0]?.mime).toBe("image/png");
    expect(direct.content).toContain("[image 1: image/png]");
    const ctx = h.core.ctx;
    const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
    const parts = h.parts;
    const host = createAgentHost({
      ctx,
      model: router,
      toolsFor: (agent) => parts.registry.forAgent(agent.id, agent.tools),
    });
    fake.enqueue(
      { toolCalls: [{ id: "call_img", name: "mcp__everything__get-tiny-image", arguments: {} }] },
      { text: "It is the MCP logo." },
    );
    const r = await host.submit({ channel: "test", sessionKey: "agent:main:test:dm:img", text: "show me" })
      .result;
    expect(r.text).toBe("It is the MCP logo.");
    const msgs = (fake.requests[1]?.body?.messages ?? []) as unknown as { role: string; content: unknown }[];
    const imageMsg = msgs.at(-1)!;
    expect(imageMsg.role).toBe("user");
    expect(JSON.stringify(imageMsg.content)).toContain(
      `data:image/png;base64,${direct.images![0]!.data.slice(0, 40)}`,
    );
    expect(JSON.stringify(imageMsg.content)).toContain("mcp__everything__get-tiny-image (call_img)");
  });

  it("server-everything over streamable HTTP: tools listed and called, the image included", async () => {
    const { freePort } = await import("../helpers/daemon.js");
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [bin("@modelcontextprotocol/server-everything"), "streamableHttp"],
      {
        env: { ...process.env, PORT: String(port) },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    try {
      await new Promise<void>((res, rej) => {
        const t = setTimeout(() => rej(new Error("server-everything did not start")), 30_000);
        child.stderr.on("data", (d: Buffer) => {
          if (d.toString().includes("listening")) {
            clearTimeout(t);
            res();
          }
        });
      });
      h = await createToolsHarness(
        { mcp: { servers: { web: { url: `http://127.0.0.1:${port}/mcp` } } } },
        { start: true },
      );
      await connected("web");
      const sum = await h.call("mcp__web__get-sum", { a: 2, b: 40 });
      expect(sum.content).toContain("42");
      const img = await h.call("mcp__web__get-tiny-image", {});
      expect(img.images?.[0]?.mime).toBe("image/png");
    } finally {
      child.kill("SIGTERM");
    }
  });

  it("server-filesystem: the folder in its arguments, outside the workspace, is what it serves", async () => {
    const notes = mkdtempSync(join(tmpdir(), "familiar-mcp-notes-"));
    dirs.push(notes);
    writeFileSync(join(notes, "todo.txt"), "buy milk");
    // The docs' example: a folder named on the command line, no roots key.
    h = await createToolsHarness(
      {
        mcp: {
          servers: {
            fs: server("@modelcontextprotocol/server-filesystem", {
              args: [bin("@modelcontextprotocol/server-filesystem"), notes],
            }),
          },
        },
      },
      { start: true },
    );
    await connected("fs");
    writeFileSync(join(h.workspace, "note.txt"), "hello from the workspace");
    const read = await h.call("mcp__fs__read_text_file", { path: join(notes, "todo.txt") });
    expect(read.isError).toBe(false);
    expect(read.content).toContain("buy milk");
    const allowed = await h.call("mcp__fs__list_allowed_directories", {});
    expect(allowed.content).toContain(notes);
    expect(allowed.content).not.toContain(h.workspace);
    const inWorkspace = await h.call("mcp__fs__read_text_file", { path: join(h.workspace, "note.txt") });
    expect(inWorkspace.isError).toBe(true);
  });

  it("server-filesystem: configured roots replace its folders (a path, and the workspace by its word)", async () => {
    const notes = mkdtempSync(join(tmpdir(), "familiar-mcp-notes-"));
    const other = mkdtempSync(join(tmpdir(), "familiar-mcp-other-"));
    dirs.push(notes, other);
    writeFileSync(join(other, "plan.txt"), "the plan");
    writeFileSync(join(notes, "todo.txt"), "buy milk");
    const fs = (roots: string[]) =>
      server("@modelcontextprotocol/server-filesystem", {
        args: [bin("@modelcontextprotocol/server-filesystem"), notes],
        roots,
      });
    h = await createToolsHarness({ mcp: { servers: { fs: fs([other]) } } }, { start: true });
    await connected("fs");
    const hh = h;
    const applied = await waitFor(
      async () => {
        const r = await hh.call("mcp__fs__list_allowed_directories", {});
        return r.content.includes(other) ? r : undefined;
      },
      20_000,
      "the configured root to be applied",
    );
    expect(applied!.content).not.toContain(notes);
    expect((await hh.call("mcp__fs__read_text_file", { path: join(other, "plan.txt") })).content).toContain(
      "the plan",
    );
    hh.core.setConfig({ mcp: { servers: { fs: fs(["workspace"]) } } });
    await connected("fs");
    writeFileSync(join(hh.workspace, "note.txt"), "hello from the workspace");
    await waitFor(
      async () => {
        const r = await hh.call("mcp__fs__list_allowed_directories", {}).catch(() => undefined);
        return r?.content.includes(hh.workspace) ? r : undefined;
      },
      20_000,
      "the workspace root to be applied",
    );
    const read = await hh.call("mcp__fs__read_text_file", { path: join(hh.workspace, "note.txt") });
    expect(read.content).toContain("hello from the workspace");
  });

  it("server-filesystem: with roots [workspace] and no directory arguments it works in the workspace", async () => {
    h = await createToolsHarness(
      {
        mcp: { servers: { fs: server("@modelcontextprotocol/server-filesystem", { roots: ["workspace"] }) } },
      },
      { start: true },
    );
    await connected("fs");
    writeFileSync(join(h.workspace, "note.txt"), "hello from the workspace");
    const allowed = await waitFor(
      async () => {
        const r = await h!.call("mcp__fs__list_allowed_directories", {});
        return r.content.includes(h!.workspace) ? r : undefined;
      },
      20_000,
      "the roots to be applied",
    );
    expect(allowed!.isError).toBe(false);
    const read = await h.call("mcp__fs__read_text_file", { path: join(h.workspace, "note.txt") });
    expect(read.content).toContain("hello from the workspace");
    const outside = await h.call("mcp__fs__read_text_file", { path: "/etc/hostname" });
    expect(outside.isError).toBe(true);
  });

  it("server-memory: entities written are read back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mcp-memory-"));
    dirs.push(dir);
    const file = join(dir, "memory.jsonl");
    h = await createToolsHarness(
      {
        mcp: {
          servers: {
            memory: server("@modelcontextprotocol/server-memory", { env: { MEMORY_FILE_PATH: file } }),
          },
        },
      },
      { start: true },
    );
    await connected("memory");
    const created = await h.call("mcp__memory__create_entities", {
      entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }],
    });
    expect(created.isError).toBe(false);
    const graph = await h.call("mcp__memory__read_graph", {});
    expect(graph.content).toContain("wrote the first program");
    expect(readFileSync(file, "utf8")).toContain("Ada");
  });

  it.skipIf(!sandbox.ok)(
    `a sandboxed server that cannot start says why and how to fix it; the grant restarts it at once${sandbox.ok ? "" : ` (SKIPPED: ${sandbox.problem ?? ""})`}`,
    async () => {
      const clock = new FakeClock();
      const pkgDir = dirname(dirname(bin("@modelcontextprotocol/server-memory")));
      const memDir = mkdtempSync(join(tmpdir(), "familiar-mcp-sbx-"));
      dirs.push(memDir);
      // The server's entry is a script in a folder the sandbox does not show (the daemon shows the
      // program itself, Node, read-only, so a missing grant is met on the script instead).
      const entryDir = mkdtempSync(join(tmpdir(), "familiar-mcp-entry-"));
      dirs.push(entryDir);
      const entry = join(entryDir, "entry.mjs");
      writeFileSync(
        entry,
        `await import(${JSON.stringify(pathToFileURL(bin("@modelcontextprotocol/server-memory")).href)});\n`,
      );
      const srv = {
        command: process.execPath,
        args: [entry],
        sandbox: true,
        env: { MEMORY_FILE_PATH: join(memDir, "m.jsonl") },
      };
      const repo = join(import.meta.dirname, "..", "..");
      h = await createToolsHarness(
        {
          tools: { exec: { sandbox: { ro: [repo, pkgDir], rw: [memDir] } } },
          mcp: { servers: { memory: srv } },
        },
        { start: true, clock },
      );
      const hh = h;
      const down = await waitFor(
        () => (hh.parts.mcp.health().memory?.state === "backoff" ? hh.parts.mcp.health().memory : undefined),
        30_000,
        "the start failure",
      );
      expect(down!.lastError).toMatch(/the server said: [\s\S]*(Cannot find module|No such file|execvp)/);
      expect(down!.lastError).toMatch(/tools\.exec\.sandbox\.ro/);
      expect(down!.lastError).toMatch(/mcp\.servers\.memory\.sandbox: false/);
      // The retry is minutes away on the fake clock: only the grant can bring it back now.
      hh.core.setConfig({
        tools: { exec: { sandbox: { ro: [repo, pkgDir, entryDir], rw: [memDir] } } },
        mcp: { servers: { memory: srv } },
      });
      await connected("memory");
      expect((await hh.call("mcp__memory__read_graph", {})).isError).toBe(false);
    },
  );
});
