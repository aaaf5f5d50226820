/**
 * MCP over streamable HTTP: the server is a real child process (test/fixtures/mcp-http-server.mjs,
 * built with the SDK's server classes) listening on 127.0.0.1. Covers headers from config, listing and
 * calling through the registry, allow lists, and a server that dies and comes back on the same port.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "mcp-http-server.mjs");
let h: ToolsHarness | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Starts the fixture; resolves with its port once it listens. */
function startServer(
  port = 0,
  env: Record<string, string> = {},
): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, [FIXTURE, String(port)], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve({ port: Number(m[1]), child });
    });
    child.on("exit", (code) => reject(new Error(`fixture exited with ${code}: ${out}`)));
  });
}

const exited = (c: ChildProcess) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once("exit", r)));

const names = (hh: ToolsHarness, agent = "main") =>
  hh.parts.registry
    .forAgent(agent)
    .specs()
    .map((s) => s.name)
    .filter((n) => n.startsWith("mcp__"))
    .sort();

describe("MCP client over streamable HTTP", () => {
  it("sends the configured headers, lists and calls tools, obeying allow lists", async () => {
    const { port } = await startServer(0, { FIXTURE_TOKEN: "t0ken" });
    h = await createToolsHarness(
      {
        mcp: {
          servers: {
            web: { url: `http://127.0.0.1:${port}/mcp`, headers: { authorization: "Bearer t0ken" } },
            nokey: { url: `http://127.0.0.1:${port}/mcp` },
          },
        },
        agents: { limited: { tools: { allow: ["group:mcp"], deny: ["mcp__web__pid"] } } },
      },
      { start: true, clock: new FakeClock() },
    );
    await waitFor(() => h?.parts.mcp.health().web?.state === "connected", 20_000, "the HTTP MCP server");
    expect(names(h)).toEqual(["mcp__web__add", "mcp__web__pid"]);
    expect(names(h, "limited")).toEqual(["mcp__web__add"]);
    expect(await h.call("mcp__web__add", { a: 20, b: 22 })).toEqual({ content: "42", isError: false });
    expect((await h.call("mcp__web__pid", {}, { agent: "limited" })).content).toContain("not available");
    // Without the header the server refuses; the daemon logs it and keeps retrying, nothing crashes.
    await waitFor(() => h?.parts.mcp.health().nokey?.state === "backoff", 20_000, "the refusal");
    expect(h.parts.mcp.health().nokey?.lastError).toMatch(/401|unauthorized/i);
    expect(h.parts.service.health().state).toBe("degraded");
  });

  it("a server that dies is noticed on the next call, and reconnected when it is back", async () => {
    const clock = new FakeClock();
    const first = await startServer();
    h = await createToolsHarness(
      { mcp: { servers: { web: { url: `http://127.0.0.1:${first.port}/mcp` } } } },
      { start: true, clock },
    );
    await waitFor(() => h?.parts.mcp.health().web?.state === "connected", 20_000, "the HTTP MCP server");
    const pid = Number((await h.call("mcp__web__pid", {})).content);
    expect(pid).toBe(first.child.pid);
    first.child.kill("SIGKILL");
    await exited(first.child);

    const down = await h.call("mcp__web__add", { a: 1, b: 1 });
    expect(down.isError).toBe(true);
    expect(down.content).toContain('MCP server "web" is not reachable');
    await waitFor(() => h?.parts.mcp.health().web?.state === "backoff", 20_000, "the failure to be noticed");
    expect(names(h)).toContain("mcp__web__add"); // tools stay listed while it is down
    const again = await h.call("mcp__web__add", { a: 1, b: 1 });
    expect(again.content).toContain('MCP server "web" is not connected');

    // Back on the same port (a fresh process: the old MCP session is gone).
    const second = await startServer(first.port);
    await clock.advance(60_000);
    await waitFor(() => h?.parts.mcp.health().web?.state === "connected", 20_000, "the reconnect");
    expect(Number((await h.call("mcp__web__pid", {})).content)).toBe(second.child.pid);
    expect(await h.call("mcp__web__add", { a: 2, b: 3 })).toEqual({ content: "5", isError: false });

    // A restart between two calls: the server answers 404 for our old session; we start a new one.
    second.child.kill("SIGKILL");
    await exited(second.child);
    const third = await startServer(first.port);
    expect((await h.call("mcp__web__add", { a: 1, b: 1 })).content).toContain("not reachable");
    await clock.advance(60_000);
    await waitFor(() => h?.parts.mcp.health().web?.state === "connected", 20_000, "the second reconnect");
    expect(Number((await h.call("mcp__web__pid", {})).content)).toBe(third.child.pid);
    expect(h.parts.mcp.health().web?.restarts).toBe(2);
  });
});
