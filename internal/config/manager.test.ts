import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../log/logger.js";
import { loadConfigFile } from "./load.js";
import { ConfigManager, diffSections, RESTART_KEYS } from "./manager.js";
import type { Config } from "./schema.js";

interface LogLine {
  level: string;
  msg: string;
  [k: string]: unknown;
}

interface Fixture {
  dir: string;
  file: string;
  manager: ConfigManager;
  logs: LogLine[];
  changes: { changed: readonly string[]; next: Config; prev: Config }[];
  errors: string[];
}

const BASE = "timezone: UTC\nlog:\n  level: info\n";
const WAIT = { timeout: 15_000, interval: 25 };

let fixture: Fixture | undefined;

function setup(initial: string): Fixture {
  const dir = mkdtempSync(join(tmpdir(), "familiar-reload-"));
  const file = join(dir, "config.yaml");
  writeFileSync(file, initial);
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString("utf8").split("\n"))
        if (line.trim()) logs.push(JSON.parse(line) as LogLine);
      cb();
    },
  });
  const logger = createLogger({ level: "debug", destination: sink, pretty: false });
  const manager = new ConfigManager(file, loadConfigFile(file, {}).config, logger, {});
  const changes: Fixture["changes"] = [];
  const errors: string[] = [];
  manager.onChange((next, prev, changed) => changes.push({ next, prev, changed }));
  manager.onError((msg) => errors.push(msg));
  fixture = { dir, file, manager, logs, changes, errors };
  return fixture;
}

afterEach(async () => {
  if (!fixture) return;
  await fixture.manager.close();
  rmSync(fixture.dir, { recursive: true, force: true });
  fixture = undefined;
});

describe("ConfigManager hot reload (real file, real watcher)", () => {
  it("applies a valid edit and notifies listeners with the changed sections", async () => {
    const f = setup(`${BASE}heartbeat:\n  every: 30m\n`);
    const before = f.manager.get();
    await f.manager.watch();
    writeFileSync(f.file, `${BASE.replace("info", "debug")}heartbeat:\n  every: 5m\n`);
    await vi.waitFor(() => expect(f.changes).toHaveLength(1), WAIT);
    const [change] = f.changes;
    expect(change?.changed).toEqual(["log", "heartbeat"]);
    expect(change?.prev).toBe(before);
    expect(change?.next).toBe(f.manager.get());
    expect(f.manager.get().heartbeat.every).toBe(5 * 60_000);
    expect(f.manager.get().log.level).toBe("debug");
    // The old object is never mutated: listeners can diff prev against next.
    expect(before.heartbeat.every).toBe(30 * 60_000);
    expect(f.manager.error()).toBeUndefined();
    expect(f.logs.some((l) => l.msg === "config reloaded (log, heartbeat)")).toBe(true);
  });

  it("applies an edit made after the first read but before the watcher was ready", async () => {
    const f = setup(`${BASE}heartbeat:\n  every: 30m\n`);
    writeFileSync(f.file, `${BASE}heartbeat:\n  every: 5m\n`); // no watcher yet: no event for this
    await f.manager.watch();
    expect(f.changes.map((c) => c.changed)).toEqual([["heartbeat"]]);
    expect(f.manager.get().heartbeat.every).toBe(5 * 60_000);
  });

  it("re-reads an unchanged file at watch start silently (no change, no error)", async () => {
    const f = setup(BASE);
    await f.manager.watch();
    expect(f.changes).toEqual([]);
    expect(f.errors).toEqual([]);
    expect(f.logs.some((l) => String(l.msg).startsWith("config reloaded"))).toBe(false);
  });

  it("rejects an invalid edit: the old config stays live and exactly one error is reported", async () => {
    const f = setup(`${BASE}gateway:\n  port: 18800\n`);
    const before = f.manager.get();
    await f.manager.watch();
    writeFileSync(f.file, `${BASE}heartbeat:\n  every: 5m\ngateway:\n  port: abc\n`);
    await vi.waitFor(() => expect(f.errors).toHaveLength(1), WAIT);
    expect(f.manager.get()).toBe(before);
    expect(f.changes).toEqual([]);
    expect(f.errors[0]).toContain('gateway.port: expected an integer 1-65535, got "abc"');
    expect(f.manager.error()).toBe(f.errors[0]);
    const errorLines = f.logs.filter((l) => l.level === "error");
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]?.msg).toMatch(
      /^config change rejected, previous config stays live: .*gateway\.port/s,
    );

    // Fixing the file applies it and clears the error.
    writeFileSync(f.file, `${BASE}heartbeat:\n  every: 5m\ngateway:\n  port: 18800\n`);
    await vi.waitFor(() => expect(f.changes).toHaveLength(1), WAIT);
    expect(f.manager.get().heartbeat.every).toBe(5 * 60_000);
    expect(f.manager.error()).toBeUndefined();
    expect(f.errors).toHaveLength(1);
  });

  it("picks up a rename-save (write a temp file, rename it over the config)", async () => {
    const f = setup(`${BASE}session:\n  idle_reset: 0\n`);
    await f.manager.watch();
    const tmp = join(f.dir, ".config.yaml.swp");
    writeFileSync(tmp, `${BASE}session:\n  idle_reset: 2h\n`);
    renameSync(tmp, f.file);
    await vi.waitFor(() => expect(f.manager.get().session.idle_reset).toBe(2 * 3_600_000), WAIT);
    expect(f.changes.map((c) => c.changed)).toEqual([["session"]]);
    // The watcher survives the rename: a second rename-save is seen too.
    writeFileSync(tmp, `${BASE}session:\n  idle_reset: 3h\n`);
    renameSync(tmp, f.file);
    await vi.waitFor(() => expect(f.manager.get().session.idle_reset).toBe(3 * 3_600_000), WAIT);
    expect(f.errors).toEqual([]);
  });

  it("reports restart-required keys and keeps their old values while applying the rest", async () => {
    const f = setup(`${BASE}data_dir: ./data\ngateway:\n  port: 18800\n  token: old-token\n`);
    const before = f.manager.get();
    await f.manager.watch();
    writeFileSync(f.file, `${BASE}data_dir: ./other\ngateway:\n  port: 18801\n  token: new-token\n`);
    await vi.waitFor(() => expect(f.changes).toHaveLength(1), WAIT);
    const live = f.manager.get();
    expect(live.gateway.port).toBe(18800);
    expect(live.data_dir).toBe(before.data_dir);
    expect(live.gateway.token).toBe("new-token");
    expect(f.changes[0]?.changed).toEqual(["gateway"]);
    const warn = f.logs.find((l) => l.level === "warn" && /need a restart/.test(l.msg));
    expect(warn?.msg).toMatch(
      /^config keys changed that need a restart to apply: data_dir \(.*\), gateway.port \(18800 -> 18801\)$/,
    );
    expect(f.manager.pendingRestart()).toEqual([
      { key: "data_dir", running: before.data_dir, file: expect.stringMatching(/other$/) },
      { key: "gateway.port", running: 18800, file: 18801 },
    ]);
  });

  it("stops reacting after close()", async () => {
    const f = setup(BASE);
    await f.manager.watch();
    await f.manager.close();
    writeFileSync(f.file, BASE.replace("info", "warn"));
    // Nothing can fire after close; a reload done by hand proves the file itself is valid.
    expect(f.manager.reload().ok).toBe(true);
    expect(f.changes).toHaveLength(1);
  });
});

describe("ConfigManager.apply / reload (no watcher)", () => {
  it("does not notify when only restart-required keys changed", () => {
    const f = setup(`${BASE}gateway:\n  port: 18800\n`);
    writeFileSync(f.file, `${BASE}gateway:\n  port: 18900\n  bind: 0.0.0.0\n  token: t0k3n-long\n`);
    const out = f.manager.reload();
    expect(out).toMatchObject({ ok: true, restartRequired: ["gateway.bind", "gateway.port"] });
    expect(out.changed).toEqual(["gateway"]);
    expect(f.manager.get().gateway).toMatchObject({ port: 18800, bind: "127.0.0.1", token: "t0k3n-long" });

    writeFileSync(f.file, `${BASE}gateway:\n  port: 18901\n  token: t0k3n-long\n`);
    const again = f.manager.reload();
    expect(again).toMatchObject({ ok: true, changed: [], restartRequired: ["gateway.port"] });
    expect(f.changes).toHaveLength(1);
    // The console's "waiting for a restart" list follows the file; an invalid edit leaves it as it was.
    expect(f.manager.pendingRestart().map((c) => c.key)).toEqual(["gateway.port"]);
    writeFileSync(f.file, "gateway: [\n");
    expect(f.manager.reload().ok).toBe(false);
    expect(f.manager.pendingRestart().map((c) => c.key)).toEqual(["gateway.port"]);
    writeFileSync(f.file, `${BASE}gateway:\n  port: 18800\n  token: t0k3n-long\n`);
    f.manager.reload();
    expect(f.manager.pendingRestart()).toEqual([]);
  });

  it("reload() never throws and returns the error", () => {
    const f = setup(BASE);
    writeFileSync(f.file, "gateway: [\n");
    const out = f.manager.reload();
    expect(out.ok).toBe(false);
    expect(out.error).toMatch(/YAML syntax error/);
    rmSync(f.file);
    expect(f.manager.reload()).toMatchObject({
      ok: false,
      error: expect.stringMatching(/cannot read config file/),
    });
    expect(f.errors).toHaveLength(2);
  });

  it("lists changed sections one level down for channels and agents", () => {
    const f = setup(BASE);
    const a = f.manager.get();
    const b: Config = {
      ...a,
      channels: { ...a.channels, discord: { ...a.channels.discord, enabled: true } },
      tools: { ...a.tools, max_result_chars: 1000 },
    };
    expect(diffSections(a, b)).toEqual(["channels.discord", "tools"]);
    expect(RESTART_KEYS).toContain("gateway.port");
  });
});
