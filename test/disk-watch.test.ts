/**
 * Issue 32: before the disk holding the database is full, the owner is told once, and `/healthz`,
 * `familiar status` and the console show it. The unit part injects a statfs reader that reports a
 * nearly full disk (no real disk is filled); the end-to-end part runs the real daemon with a
 * threshold above the real disk's free space, so the real statfs says "low".
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../internal/core/clock.js";
import { DiskWatch, type DiskSpace } from "../internal/runtime/disk-watch.js";
import { formatStatus } from "../internal/cli/status.js";
import { createTestCore, type TestCore } from "./helpers/core.js";
import { childEnv, cliCommand, startDaemonProcess, type DaemonProcess } from "./helpers/daemon.js";
import { execFileSync } from "node:child_process";

const MB = 1024 * 1024;
let core: TestCore | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  core?.close();
  core = undefined;
  await daemon?.stop();
  daemon = undefined;
});

function setup(free: { mb: number }) {
  const clock = new FakeClock();
  core = createTestCore(
    {
      budgets: { warn_target: "test:owner" },
      disk: { warn_free_mb: 500, warn_free_percent: 2, check_every: "1m" },
    },
    { clock },
  );
  const sent: { target: string; text: string }[] = [];
  const reads: string[] = [];
  const statfs = (path: string): DiskSpace => {
    reads.push(path);
    return { freeBytes: free.mb * MB, totalBytes: 100_000 * MB };
  };
  const make = () =>
    new DiskWatch(core!.ctx, {
      statfs,
      deliver: async (target, text) => {
        sent.push({ target, text });
      },
    });
  return { clock, sent, reads, make };
}

describe("the data dir's disk space", () => {
  it("tells the owner once when it runs low, shows degraded, and clears when space is back", async () => {
    const free = { mb: 50_000 };
    const { clock, sent, reads, make } = setup(free);
    const watch = make();
    await watch.start();
    expect(reads[0]).toBe(core!.ctx.config().data_dir);
    expect(watch.health()).toMatchObject({ state: "ok", free_mb: 50_000 });
    free.mb = 400; // under warn_free_mb (500), nearly full
    await clock.advance(60_000);
    expect(watch.health()).toMatchObject({ state: "degraded", free_mb: 400 });
    expect(watch.health().detail).toContain("nearly full: 400 MB free (0.4%)");
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ target: "test:owner" });
    expect(sent[0]?.text).toContain("the disk holding the data dir is nearly full");
    // Still low on the next checks and after a restart of the watch (the daemon): not told again.
    await clock.advance(180_000);
    await watch.stop();
    const again = make();
    await again.start();
    expect(again.health().state).toBe("degraded");
    expect(sent).toHaveLength(1);
    // Space back: ok, and a later low spell is told again.
    free.mb = 10_000;
    await clock.advance(60_000);
    expect(again.health().state).toBe("ok");
    free.mb = 1500; // 1.5% free: under warn_free_percent (2)
    await clock.advance(60_000);
    expect(again.health().state).toBe("degraded");
    expect(sent).toHaveLength(2);
    await again.stop();
  });

  it("without budgets.warn_target the notice goes to the chat the owner last wrote from", async () => {
    const clock = new FakeClock();
    core = createTestCore({}, { clock });
    const sent: string[] = [];
    const watch = new DiskWatch(core.ctx, {
      statfs: () => ({ freeBytes: 10 * MB, totalBytes: 100_000 * MB }),
      deliver: async (target) => {
        sent.push(target);
      },
    });
    await watch.start();
    expect(sent).toEqual(["last"]);
    await watch.stop();
  });

  it("a failed reading is logged and changes nothing", async () => {
    const clock = new FakeClock();
    core = createTestCore({}, { clock });
    const watch = new DiskWatch(core.ctx, {
      statfs: () => {
        throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
      },
    });
    await watch.start();
    expect(watch.health()).toEqual({ state: "starting" });
    await watch.stop();
  });

  it("status prints the disk line", () => {
    expect(formatStatus({ disk: { state: "degraded", detail: "nearly full: 10 MB free" } })).toContain(
      "disk         degraded (nearly full: 10 MB free)",
    );
  });

  it("the real daemon: /healthz says warning and names the disk; status shows it", async () => {
    // More free space wanted than any test disk has: the real statfs reports "low".
    daemon = await startDaemonProcess({ config: { disk: { warn_free_mb: 1_000_000_000 } } });
    const res = await fetch(`${daemon.url}/healthz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      status: string;
      warnings?: string[];
      services: Record<string, { state: string }>;
    };
    expect(body.status).toBe("warning");
    expect(body.services.disk?.state).toBe("degraded");
    expect(body.warnings?.[0]).toContain("the disk holding the data dir is nearly full");
    expect(daemon.stdoutLines().some((l) => l.includes("the disk holding the data dir is nearly full"))).toBe(
      true,
    );
    const [node, ...args] = cliCommand();
    const out = execFileSync(node as string, [...args, "status", "--config", daemon.configPath], {
      env: childEnv(),
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(out).toMatch(/^disk +degraded \(the disk holding the data dir is nearly full/m);
  }, 60_000);

  it("the real daemon with room to spare: /healthz says ok", async () => {
    daemon = await startDaemonProcess({ config: { disk: { warn_free_mb: 0, warn_free_percent: 0 } } });
    const body = (await (await fetch(`${daemon.url}/healthz`)).json()) as { status: string };
    expect(body.status).toBe("ok");
  }, 60_000);
});
