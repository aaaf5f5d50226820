/**
 * Issue 46 item 5: MCP calls and server lifecycles.
 * - a long tool that reports progress is not cut at 120 s (a progress token is sent, and each
 *   progress resets the silence limit), a silent one is, and so is one past the total limit: all on
 *   the fake clock, the server paced by files (test/fakes/mcp-progress-server.mjs);
 * - a server still starting (it never answers `initialize`, and has a child of its own) is ended
 *   with its whole process group when a reload removes it and when the real daemon gets SIGTERM:
 *   neither process is left behind with parent pid 1.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cleanupDaemons, REPO_ROOT, startDaemonProcess } from "../helpers/daemon.js";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

const progressServer = join(REPO_ROOT, "test/fakes/mcp-progress-server.mjs");
const slowStart = join(REPO_ROOT, "test/fakes/mcp-slow-start.mjs");

let h: ToolsHarness | undefined;
const dirs: string[] = [];
const tmp = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(cleanupDaemons);

/** True while `pid` exists (a zombie counts as gone: it runs nothing). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** The parent pid of `pid`, or undefined once it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Waits until both processes are gone, failing if either is ever seen adopted by pid 1. */
async function goneWithoutOrphans(pids: { server: number; child: number }): Promise<void> {
  await waitFor(
    () => {
      for (const pid of [pids.server, pids.child])
        if (alive(pid) && parentOf(pid) === 1) throw new Error(`process ${pid} was orphaned (parent pid 1)`);
      return !alive(pids.server) && !alive(pids.child);
    },
    15_000,
    "the server and its child to be gone",
  );
}

const readPids = (dir: string): { server: number; child: number } =>
  JSON.parse(readFileSync(join(dir, "pids"), "utf8")) as { server: number; child: number };

describe("MCP call limits (fake clock)", () => {
  async function start(clock: FakeClock): Promise<{ steps: string; hh: ToolsHarness }> {
    const steps = tmp("familiar-mcp-steps-");
    h = await createToolsHarness(
      {
        mcp: {
          servers: { p: { command: process.execPath, args: [progressServer], env: { STEP_DIR: steps } } },
        },
      },
      { start: true, clock },
    );
    const hh = h;
    await waitFor(() => hh.parts.mcp.health().p?.state === "connected", 30_000, "the progress server");
    return { steps, hh };
  }

  it("a tool that reports progress runs past 120 s; each progress resets the silence limit", async () => {
    const clock = new FakeClock();
    const { steps, hh } = await start(clock);
    const dir = join(steps, "long");
    const call = hh.call("mcp__p__work", { steps: 3, tag: "long" });
    await waitFor(() => existsSync(join(dir, "token")), 15_000, "the call to arrive");
    for (let i = 1; i <= 3; i++) {
      writeFileSync(join(dir, `go-${i}`), "");
      await waitFor(() => existsSync(join(dir, `sent-${i}`)), 15_000, `progress ${i}`);
      await clock.advance(110_000); // under the 120 s of silence, 330 s in all
    }
    writeFileSync(join(dir, "finish"), "");
    const r = await call;
    expect(r.isError).toBe(false);
    expect(r.content).toBe("done 3");
    expect(JSON.parse(readFileSync(join(dir, "token"), "utf8"))).not.toBeNull();
  });

  it("a tool silent for 120 s is cut, and the connection stays usable", async () => {
    const clock = new FakeClock();
    const { steps, hh } = await start(clock);
    const call = hh.call("mcp__p__work", { steps: 1, tag: "silent" });
    await waitFor(() => existsSync(join(steps, "silent", "token")), 15_000, "the call to arrive");
    let settled = false;
    void call.finally(() => (settled = true));
    await clock.advance(119_000);
    expect(settled).toBe(false);
    await clock.advance(1_000);
    const r = await call;
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(/sent nothing \(no result, no progress\) for 120 s/);
    expect(hh.parts.mcp.health().p?.state).toBe("connected");
    const next = hh.call("mcp__p__work", { steps: 0, tag: "after" });
    await waitFor(() => existsSync(join(steps, "after", "token")), 15_000, "the next call");
    writeFileSync(join(steps, "after", "finish"), "");
    expect((await next).content).toBe("done 0");
  });

  it("progress does not keep a call alive past the 30 min total", async () => {
    const clock = new FakeClock();
    const { steps, hh } = await start(clock);
    const dir = join(steps, "endless");
    let settled = false;
    const call = hh.call("mcp__p__work", { steps: 40, tag: "endless" }).finally(() => (settled = true));
    await waitFor(() => existsSync(join(dir, "token")), 15_000, "the call to arrive");
    // Progress every 100 s: 18 of them reach 1,700 s, and the call is still running.
    for (let i = 1; i <= 18; i++) {
      if (i > 1) await clock.advance(100_000);
      writeFileSync(join(dir, `go-${i}`), "");
      await waitFor(() => existsSync(join(dir, `sent-${i}`)), 15_000, `progress ${i}`);
      expect(settled).toBe(false);
    }
    await clock.advance(99_000);
    expect(settled).toBe(false);
    await clock.advance(1_000); // 1,800 s, 100 s after the last progress
    const r = await call;
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(/ran past its limit of 1800 s/);
  });
});

describe("MCP servers still starting are not orphaned", () => {
  it("a reload that removes a server still starting ends it and its child at once", async () => {
    const dir = tmp("familiar-mcp-slow-");
    const slow = { command: process.execPath, args: [slowStart, dir] };
    h = await createToolsHarness({ mcp: { servers: { slow } } }, { start: true, clock: new FakeClock() });
    await waitFor(() => existsSync(join(dir, "pids")), 15_000, "the slow server to start");
    const pids = readPids(dir);
    expect(h.parts.mcp.health().slow?.state).toBe("connecting");
    h.core.setConfig({ mcp: { servers: {} } });
    await goneWithoutOrphans(pids);
    expect(h.parts.mcp.health().slow).toBeUndefined();
  });

  it("a reload that removes a connected server ends it at once", async () => {
    const steps = tmp("familiar-mcp-steps-");
    const p = { command: process.execPath, args: [progressServer], env: { STEP_DIR: steps } };
    h = await createToolsHarness({ mcp: { servers: { p } } }, { start: true, clock: new FakeClock() });
    const hh = h;
    const up = await waitFor(
      () => (hh.parts.mcp.health().p?.state === "connected" ? hh.parts.mcp.health().p : undefined),
      30_000,
      "the progress server",
    );
    const pid = up!.pid!;
    expect(alive(pid)).toBe(true);
    hh.core.setConfig({ mcp: { servers: {} } });
    // Its stdin closes and its group is signalled: gone within the grace, not at a 60 s timeout.
    await waitFor(() => !alive(pid), 5_000, "the removed server to exit");
    expect(hh.parts.mcp.health().p).toBeUndefined();
  });

  it("the daemon's SIGTERM ends a server still starting and its child", async () => {
    const dir = tmp("familiar-mcp-slow-");
    const d = await startDaemonProcess({
      config: { mcp: { servers: { slow: { command: process.execPath, args: [slowStart, dir] } } } },
    });
    await waitFor(() => existsSync(join(dir, "pids")), 15_000, "the slow server to start");
    const pids = readPids(dir);
    expect(alive(pids.server) && alive(pids.child)).toBe(true);
    const exit = await d.stop("SIGTERM");
    expect(exit.code).toBe(0);
    await goneWithoutOrphans(pids);
    await d.cleanup();
  });
});
