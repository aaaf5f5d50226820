/**
 * Issue 35: a gateway-only owner's first cron job. `familiar cron add` (default `--deliver last`) and,
 * right after it, `familiar cron run` against a running daemon that has no channel and has never been
 * written to on one: the run succeeds, prints the reply, and keeps it in the run record.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, cliCommand, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";

const run = promisify(execFile);
let d: DaemonProcess;

beforeAll(async () => {
  d = await startDaemonProcess({ config: { cron: { enabled: true } } });
}, 60_000);
afterAll(async () => {
  await d?.cleanup();
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...pre] = cliCommand();
  try {
    const r = await run(cmd!, [...pre, ...args, "--config", d.configPath], {
      cwd: d.dir,
      env: childEnv(),
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("cron from the CLI for a gateway-only owner", () => {
  it("cron add then cron run at once: the run succeeds and the reply is printed and kept", async () => {
    const add = await cli(["cron", "add", "tea", "--every", "1h", "-m", "time for tea"]);
    expect(add).toMatchObject({ code: 0, stderr: "" });
    const r = await cli(["cron", "run", "tea"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/manual\s+ok/);
    expect(r.stdout).toContain("echo: time for tea");
    expect(r.stdout).toContain("kept in `familiar cron runs tea --json`");
    const runs = await cli(["cron", "runs", "tea", "--json"]);
    expect(JSON.parse(runs.stdout)).toEqual([
      expect.objectContaining({ status: "ok", delivered: false, outputPreview: "echo: time for tea" }),
    ]);
  });
});
