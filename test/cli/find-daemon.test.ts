/**
 * Issue 35: the CLI finds the running daemon from any directory. `familiar run` records itself in the
 * user's state dir (`$XDG_STATE_HOME/familiar/daemons.json`, 0600); `familiar status` run elsewhere,
 * with no config.yaml and no flag, talks to it; with two daemons it says which one it talks to and how
 * to pick; a registry file others may write is ignored, and the error names --config and FAMILIAR_CONFIG.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryPath, readRegistry } from "../../internal/gateway/daemon-registry.js";
import { childEnv, cliCommand, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";

const run = promisify(execFile);
let state: string;
let elsewhere: string;
const daemons: DaemonProcess[] = [];

beforeAll(() => {
  state = mkdtempSync(join(tmpdir(), "familiar-state-test-"));
  elsewhere = mkdtempSync(join(tmpdir(), "familiar-elsewhere-"));
});
afterAll(async () => {
  for (const d of daemons) await d.cleanup();
  rmSync(state, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

async function status(): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...pre] = cliCommand();
  try {
    const r = await run(cmd!, [...pre, "status"], {
      cwd: elsewhere,
      env: childEnv({ XDG_STATE_HOME: state }),
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("the CLI finds the running daemon from any directory", () => {
  it("one daemon: status from another directory reaches it", async () => {
    const a = await startDaemonProcess({ env: { XDG_STATE_HOME: state } });
    daemons.push(a);
    const env = { XDG_STATE_HOME: state };
    expect(readRegistry(env).map((e) => [e.pid, e.configFile])).toEqual([[a.child.pid, a.configPath]]);
    expect(statSync(registryPath(env)).mode & 0o777).toBe(0o600);
    const r = await status();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`(pid ${a.child.pid})`);
  });

  it("two daemons: it says which one it talks to and how to pick another", async () => {
    const b = await startDaemonProcess({ env: { XDG_STATE_HOME: state } });
    daemons.push(b);
    const r = await status();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`2 daemons are running, using the newest: ${b.configPath}`);
    expect(r.stderr).toContain(daemons[0]!.configPath);
    expect(r.stderr).toContain("Pick one with --config PATH or FAMILIAR_CONFIG.");
    expect(r.stdout).toContain(`(pid ${b.child.pid})`);
  });

  it("a registry others may write is not followed; the error names --config and FAMILIAR_CONFIG", async () => {
    chmodSync(registryPath({ XDG_STATE_HOME: state }), 0o666);
    const r = await status();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("--config PATH or FAMILIAR_CONFIG");
    expect(r.stdout).not.toContain(`(pid ${daemons[1]!.child.pid})`);
  });

  it("a clean stop removes the daemon from the registry", async () => {
    chmodSync(registryPath({ XDG_STATE_HOME: state }), 0o600);
    const b = daemons[1]!;
    await b.stop();
    expect(readRegistry({ XDG_STATE_HOME: state }).map((e) => e.pid)).toEqual([daemons[0]!.child.pid]);
  });
});
