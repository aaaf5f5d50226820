/**
 * The daemon as a user runs it: a real `familiar run` child process, real SQLite file, real socket.
 */
import Database from "better-sqlite3";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";

afterEach(async () => {
  await cleanupDaemons();
});

function jsonLines(lines: string[]): { level: string; msg: string; [k: string]: unknown }[] {
  return lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as { level: string; msg: string }];
    } catch {
      return [];
    }
  });
}

describe("daemon lifecycle (child process)", () => {
  it("starts with no credentials, answers /healthz ok, and stops cleanly on SIGTERM", async () => {
    const d = await startDaemonProcess();
    const res = await fetch(`${d.url}/healthz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; pid: number; services: Record<string, unknown> };
    expect(body.status).toBe("ok");
    expect(body.pid).toBe(d.child.pid);
    expect(body.services.store).toEqual({ state: "ok" });

    // Log lines leave once per event-loop turn: the ready line may arrive just after /healthz answers.
    await vi.waitFor(
      () => expect(jsonLines(d.stdoutLines()).find((l) => l.msg === "familiar is ready")).toBeDefined(),
      { timeout: 20_000, interval: 50 },
    );
    const logs = jsonLines(d.stdoutLines());
    // No provider: the built-in echo model answers, and says so loudly.
    expect(logs.find((l) => l.level === "warn" && /NO MODEL PROVIDER CONFIGURED/.test(l.msg))).toBeDefined();
    expect(existsSync(join(d.dataDir, "familiar.lock"))).toBe(true);

    const exit = await d.stop("SIGTERM");
    expect(exit).toEqual({ code: 0, signal: null });
    expect(jsonLines(d.stdoutLines()).at(-1)?.msg).toBe("stopped");
    expect(existsSync(join(d.dataDir, "familiar.lock"))).toBe(false);
    // Closed cleanly: the WAL was checkpointed away and the file passes an integrity check.
    expect(existsSync(join(d.dataDir, "familiar.db-wal"))).toBe(false);
    const db = new Database(join(d.dataDir, "familiar.db"));
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const core = db.prepare("SELECT version FROM schema_version WHERE namespace = 'core'").get();
      expect(core).toEqual({ version: expect.any(Number) });
    } finally {
      db.close();
    }
  });

  it("hot-reloads its config file: an invalid edit shows on /healthz and keeps the daemon up", async () => {
    const d = await startDaemonProcess();
    const good = readFileSync(d.configPath, "utf8");
    const health = async (): Promise<{ status: string; config_error: string | null }> =>
      (await (await fetch(`${d.url}/healthz`)).json()) as { status: string; config_error: string | null };
    writeFileSync(d.configPath, good.replace('"level": "info"', '"level": "loud"'));
    await vi.waitFor(
      async () => expect((await health()).config_error).toMatch(/log\.level: expected one of/),
      {
        timeout: 20_000,
        interval: 100,
      },
    );
    expect((await health()).status).toBe("ok");
    writeFileSync(d.configPath, good.replace('"level": "info"', '"level": "debug"'));
    await vi.waitFor(async () => expect((await health()).config_error).toBeNull(), {
      timeout: 20_000,
      interval: 100,
    });
    // Log lines leave stdout once per event-loop turn (internal/log/line-batch.ts), so the reload's
    // line may reach us just after /healthz already shows the new config.
    await vi.waitFor(
      () => expect(jsonLines(d.stdoutLines()).some((l) => l.msg === "config reloaded (log)")).toBe(true),
      { timeout: 20_000, interval: 50 },
    );
    const logs = jsonLines(d.stdoutLines());
    expect(logs.filter((l) => l.level === "error" && /config change rejected/.test(l.msg))).toHaveLength(1);
    expect(await d.stop()).toEqual({ code: 0, signal: null });
  });

  it("SIGINT (Ctrl-C) also exits 0", async () => {
    const d = await startDaemonProcess();
    expect(await d.stop("SIGINT")).toEqual({ code: 0, signal: null });
  });

  it("refuses a second daemon on the same data dir with one clear line, and leaves the first running", async () => {
    const first = await startDaemonProcess();
    const second = await startDaemonProcess({ dir: first.dir, noWait: true });
    const exit = await second.waitExit();
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    const err = second.stderrLines().filter((l) => l.trim());
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(
      new RegExp(
        `^familiar: failed to start: another familiar daemon \\(pid ${first.child.pid}\\) is already running on this data dir`,
      ),
    );
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect(existsSync(join(first.dataDir, "familiar.lock"))).toBe(true);
    expect(await first.stop()).toEqual({ code: 0, signal: null });
  });

  it("takes over the lock left by a daemon that was killed with SIGKILL", async () => {
    const first = await startDaemonProcess();
    expect((await first.kill9()).signal).toBe("SIGKILL");
    expect(existsSync(join(first.dataDir, "familiar.lock"))).toBe(true);
    const second = await startDaemonProcess({ dir: first.dir });
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    expect(await second.stop()).toEqual({ code: 0, signal: null });
  });

  it("a crash at start (invalid config) exits non-zero with the reason on one line", async () => {
    const d = await startDaemonProcess({
      config: "data_dir: {{DATA_DIR}}\ngateway:\n  port: abc\n  bnd: 0.0.0.0\n",
      noWait: true,
    });
    const exit = await d.waitExit();
    expect(exit.code).toBe(1);
    const err = d.stderrLines().filter((l) => l.trim());
    expect(err).toHaveLength(1);
    expect(err[0]).toBe(
      `familiar: failed to start: ${d.configPath}: 2 config error(s): ` +
        'gateway.port: expected an integer 1-65535, got "abc"; gateway.bnd: unknown key (did you mean "bind"?)',
    );
    expect(existsSync(join(d.dataDir, "familiar.lock"))).toBe(false);
  });

  it("a missing environment variable is named at start", async () => {
    const d = await startDaemonProcess({
      config: "data_dir: {{DATA_DIR}}\ngateway:\n  port: {{PORT}}\n  token: ${FAMILIAR_TEST_TOKEN}\n",
      noWait: true,
    });
    expect((await d.waitExit()).code).toBe(1);
    expect(d.stderrLines().join("\n")).toMatch(
      /gateway\.token: environment variable FAMILIAR_TEST_TOKEN is not set/,
    );
  });

  it("on a non-loopback bind without gateway.token, serves only holders of the generated token", async () => {
    const d = await startDaemonProcess({ config: { gateway: { bind: "0.0.0.0" } } });
    expect((await fetch(`${d.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${d.url}/v1/models`, { headers: d.headers() })).status).toBe(200);
  });

  it("substitutes environment variables from the child's environment", async () => {
    const d = await startDaemonProcess({
      config: "data_dir: {{DATA_DIR}}\nworkspace: {{WORKSPACE}}\ngateway:\n  port: ${FAM_PORT}\n",
      env: { FAM_PORT: "0" },
      noWait: true,
    });
    // Port 0 is outside 1-65535: the value came from the env and was validated as a number.
    expect((await d.waitExit()).code).toBe(1);
    expect(d.stderrLines().join("\n")).toContain("gateway.port: expected an integer 1-65535, got 0");
  });
});
