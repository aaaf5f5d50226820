/**
 * Issue 47, dead ends: `familiar stop`, `restart` and `logs` exist and work on the real daemon; a
 * typo of a command says "did you mean", not "too many arguments for 'run'"; a key in the wrong
 * place names where it belongs; `import openclaw` with no OpenClaw says where it looked and `--from`;
 * `stop` never signals a process a stale lock names that is not a familiar daemon.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parseConfigText } from "../../internal/config/load.js";
import { processAlive, readRuntimeFile } from "../../internal/gateway/runtime-file.js";
import { childEnv, cliCommand, runCli, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];
const pids: number[] = [];
afterAll(async () => {
  for (const d of daemons) await d.cleanup();
  for (const p of pids) if (processAlive(p)) process.kill(p, "SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

describe("no dead ends", () => {
  it("a typo of a command suggests the command", async () => {
    const r = await runCli(["stauts"], temp("familiar-typo-"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("unknown command 'stauts'; did you mean 'status'?");
    expect(r.stderr).not.toContain("too many arguments");
    const none = await runCli(["frobnicate"], temp("familiar-typo-"));
    expect(none.stderr).toContain("unknown command 'frobnicate' (familiar --help lists them)");
  }, 60_000);

  it("a key in the wrong place names where it belongs", () => {
    expect(() => parseConfigText("telegram:\n  enabled: true\n", "/x/config.yaml", {})).toThrow(
      "telegram: unknown key here (did you mean channels.telegram?)",
    );
    expect(() => parseConfigText("gateway:\n  budgets: {}\n", "/x/config.yaml", {})).toThrow(
      "gateway.budgets: unknown key here (did you mean budgets?)",
    );
  });

  it("import openclaw with no OpenClaw says where it looked and --from", async () => {
    const home = temp("familiar-home-");
    const r = await runCli(["import", "openclaw", "--into", join(home, "new")], home, { HOME: home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no OpenClaw state directory at ${join(home, ".openclaw")}`);
    expect(r.stderr).toContain("--from DIR");
    expect(r.stderr).not.toContain("ENOENT");
  }, 60_000);

  it("stop drains the daemon and it exits 0", async () => {
    const d = await startDaemonProcess();
    daemons.push(d);
    const r = await runCli(["stop", "--config", d.configPath], d.dir);
    expect(r.stdout).toContain(`stopped the daemon (pid ${d.child.pid})`);
    expect(r.code).toBe(0);
    expect(await d.waitExit()).toEqual({ code: 0, signal: null });
    const again = await runCli(["stop", "--config", d.configPath], d.dir);
    expect(again.stdout).toContain("no daemon is running on");
  }, 90_000);

  it("stop never signals a pid a stale lock names that is not a familiar daemon", async () => {
    const dir = temp("fam-stale-");
    writeFileSync(join(dir, "config.yaml"), "data_dir: ./data\n", { mode: 0o600 });
    mkdirSync(join(dir, "data"));
    const bystander = spawn("sleep", ["60"], { stdio: "ignore" });
    pids.push(bystander.pid!);
    writeFileSync(join(dir, "data", "familiar.lock"), String(bystander.pid));
    const r = await runCli(["stop", "--config", join(dir, "config.yaml")], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`names pid ${bystander.pid}, which is not a familiar daemon`);
    expect(processAlive(bystander.pid!)).toBe(true);
  }, 60_000);

  it("restart starts a new daemon; logs prints its lines and follows new ones", async () => {
    const d = await startDaemonProcess();
    daemons.push(d);
    const r = await runCli(["restart", "--config", d.configPath], d.dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(await d.waitExit()).toEqual({ code: 0, signal: null });
    const card = readRuntimeFile(d.dataDir)!;
    pids.push(card.pid);
    expect(card.pid).not.toBe(d.child.pid);
    expect(r.stdout).toContain(
      `started the daemon (pid ${card.pid}); its log: ${join(d.dataDir, "familiar.log")}`,
    );
    expect((await fetch(`${d.url}/healthz`)).status).toBe(200);

    const past = await runCli(["logs", "--no-follow", "-n", "20", "--config", d.configPath], d.dir);
    expect(past.code).toBe(0);
    expect(past.stdout).toMatch(/INFO\s+gateway listening on/);

    const [cmd, ...pre] = cliCommand();
    const follower: ChildProcess = spawn(cmd!, [...pre, "logs", "--config", d.configPath], {
      cwd: d.dir,
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    follower.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    try {
      await vi.waitFor(() => expect(out).toContain("gateway listening on"), {
        timeout: 30_000,
        interval: 50,
      });
      const text = readFileSync(d.configPath, "utf8");
      writeFileSync(d.configPath, text.replace('"level": "info"', '"level": "debug"'));
      await vi.waitFor(() => expect(out).toMatch(/config reloaded \(log\)/), {
        timeout: 30_000,
        interval: 50,
      });
    } finally {
      follower.kill("SIGINT");
    }
    const stop = await runCli(["stop", "--config", d.configPath], d.dir);
    expect(stop.code).toBe(0);
    expect(processAlive(card.pid)).toBe(false);
  }, 120_000);
});
