import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

const sandbox = await probeSandbox();

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "mcp-server.mjs");
const fixture = (env: Record<string, string> = {}) => ({ command: process.execPath, args: [FIXTURE], env });

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const names = (hh: ToolsHarness, agent = "main") =>
  hh.parts.registry
    .forAgent(agent)
    .specs()
    .map((s) => s.name)
    .filter((n) => n.startsWith("mcp__"))
    .sort();

describe("MCP client", () => {
  it("lists and calls a stdio server's tools, obeying allow lists", async () => {
    h = await createToolsHarness(
      { mcp: { servers: { fx: fixture() } }, agents: { limited: { tools: ["mcp__fx__add"] } } },
      { start: true },
    );
    await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the MCP server");
    expect(names(h)).toEqual(["mcp__fx__add", "mcp__fx__fail", "mcp__fx__pid"]);
    expect(names(h, "limited")).toEqual(["mcp__fx__add"]);
    const spec = h.parts.registry
      .forAgent("main")
      .specs()
      .find((s) => s.name === "mcp__fx__add");
    expect(spec?.description).toBe("[fx] Adds two numbers");
    expect(spec?.parameters).toMatchObject({ type: "object", properties: { a: { type: "number" } } });
    expect(await h.call("mcp__fx__add", { a: 2, b: 40 })).toEqual({ content: "42", isError: false });
    expect(await h.call("mcp__fx__fail", {})).toEqual({ content: "this tool always fails", isError: true });
    const bad = await h.call("mcp__fx__add", { a: "x", b: 1 });
    expect(bad.isError).toBe(true);
    expect(bad.content).toMatch(/a/);
    expect(h.parts.service.health()).toMatchObject({
      state: "ok",
      mcp: { fx: { state: "connected", tools: 3 } },
    });
  });

  it("reconnects with backoff after the server is killed", async () => {
    const clock = new FakeClock();
    h = await createToolsHarness({ mcp: { servers: { fx: fixture() } } }, { start: true, clock });
    await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the MCP server");
    const pid = Number((await h.call("mcp__fx__pid", {})).content);
    expect(h.parts.mcp.health().fx?.pid).toBe(pid);
    process.kill(pid, "SIGKILL");
    await waitFor(() => h?.parts.mcp.health().fx?.state === "backoff", 20_000, "the crash to be noticed");
    // While down, the tools stay listed and answer with a clear error.
    expect(names(h)).toContain("mcp__fx__add");
    const down = await h.call("mcp__fx__add", { a: 1, b: 1 });
    expect(down.isError).toBe(true);
    expect(down.content).toContain('MCP server "fx" is not connected');
    expect(h.parts.service.health().state).toBe("degraded");
    await clock.advance(1000);
    await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the reconnect");
    const pid2 = Number((await h.call("mcp__fx__pid", {})).content);
    expect(pid2).not.toBe(pid);
    expect(h.parts.mcp.health().fx?.restarts).toBe(1);
    expect(await h.call("mcp__fx__add", { a: 1, b: 1 })).toEqual({ content: "2", isError: false });
  });

  it("retries a server that fails to start without failing the service", async () => {
    const clock = new FakeClock();
    h = await createToolsHarness(
      { mcp: { servers: { broken: { command: "/nonexistent/mcp-binary" } } } },
      { start: true, clock },
    );
    await waitFor(() => h?.parts.mcp.health().broken?.state === "backoff", 20_000, "the failure");
    expect(h.parts.mcp.health().broken?.nextRetryAt).toBe(clock.now() + 1000);
    await clock.advance(1000);
    await waitFor(
      () =>
        (h?.parts.mcp.health().broken?.restarts ?? 0) >= 1 &&
        h?.parts.mcp.health().broken?.state === "backoff",
      20_000,
      "the retry",
    );
    // Exponential: the second wait is 2s.
    expect(h.parts.mcp.health().broken?.nextRetryAt).toBe(clock.now() + 2000);
  });

  it("follows config changes: add, restart with new env, remove", async () => {
    h = await createToolsHarness({}, { start: true });
    expect(names(h)).toEqual([]);
    h.core.setConfig({ mcp: { servers: { fx: fixture() } } });
    await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the added server");
    expect(names(h)).toContain("mcp__fx__add");
    h.core.setConfig({ mcp: { servers: { fx: fixture({ FIXTURE_TAG: "v2" }) } } });
    await waitFor(() => h && names(h).includes("mcp__fx__tag"), 20_000, "the restarted server");
    expect((await h.call("mcp__fx__tag", {})).content).toBe("v2");
    h.core.setConfig({ mcp: { servers: {} } });
    await waitFor(() => h && names(h).length === 0, 20_000, "the removal");
    expect(h.parts.mcp.health()).toEqual({});
  });

  it.skipIf(!sandbox.ok)(
    `runs a stdio server in the sandbox with sandbox: true (own PID namespace)${sandbox.ok ? "" : ` (SKIPPED: ${sandbox.problem ?? ""})`}`,
    async () => {
      const repo = join(import.meta.dirname, "..", "..");
      // The server runs on the Node running this test: wherever that Node and the checkout live
      // (under /tmp, where the sandbox has its own empty /tmp, or beside the system dirs), both are
      // bound read-only, so the test does not depend on the checkout's location.
      const node = dirname(dirname(process.execPath));
      try {
        h = await createToolsHarness(
          {
            tools: { exec: { sandbox: { ro: [repo, node] } } },
            mcp: { servers: { fx: { ...fixture(), sandbox: true } } },
          },
          { start: true },
        );
        await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the sandboxed server");
        expect(await h.call("mcp__fx__add", { a: 2, b: 40 })).toEqual({ content: "42", isError: false });
        // Inside its own PID namespace the server is one of the first processes, not the host's pid.
        const pid = Number((await h.call("mcp__fx__pid", {})).content);
        expect(pid).toBeLessThan(5);
        const hostPid = h.parts.mcp.health().fx?.pid ?? 0;
        expect(readFileSync(`/proc/${hostPid}/cmdline`, "utf8")).toContain("bwrap");
      } finally {
        /* harness closed in afterEach */
      }
    },
  );
});
