/**
 * The README's quick start as a newcomer lives it, on a fresh copy of the repository: config.yaml is
 * there (tracked, the file `npm start` runs); the owner edits it; the test suite does not care;
 * `familiar init` still writes the built-in template; `familiar run --port N`
 * serves on N; a clash on that port names the program holding it and what to change.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, freePort, REPO_ROOT } from "./helpers/daemon.js";

/** The files a clone has: git's list when this is a git checkout, else a walk without build output. */
function repoFiles(): string[] {
  try {
    return execFileSync("git", ["ls-files", "-co", "--exclude-standard"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    })
      .split("\n")
      .filter(Boolean);
  } catch {
    const skip = new Set(["node_modules", "dist", "data", ".git", "config.yaml"]);
    const out: string[] = [];
    const walk = (rel: string): void => {
      for (const e of readdirSync(join(REPO_ROOT, rel), { withFileTypes: true })) {
        const p = rel ? `${rel}/${e.name}` : e.name;
        if (skip.has(p)) continue;
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) out.push(p);
      }
    };
    walk("");
    return out;
  }
}

let copy: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), "familiar-clone-"));
  for (const f of repoFiles()) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    try {
      copyFileSync(join(REPO_ROOT, f), join(copy, f));
    } catch (err) {
      // git lists files deleted in the work tree but not yet committed; a clone would not have them.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  // `npm install` is the network's job; the copy shares the installed packages.
  symlinkSync(join(REPO_ROOT, "node_modules"), join(copy, "node_modules"), "dir");
});

afterAll(async () => {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGTERM");
      await new Promise((res) => c.once("exit", res));
    }
  rmSync(copy, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(cmd, args, { cwd: copy, env: childEnv(env), stdio: "pipe" });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  return new Promise((res) => child.on("close", (code) => res({ code, stdout, stderr })));
}

/** The copy's own CLI, from its sources. */
function familiarArgs(...args: string[]): string[] {
  const tsx = pathToFileURL(createRequire(join(REPO_ROOT, "package.json")).resolve("tsx")).href;
  return ["--import", tsx, join(copy, "cmd/familiar.ts"), ...args];
}

async function waitHealthy(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error("daemon did not become healthy");
}

describe("quick start on a fresh copy", () => {
  it("ships config.yaml, keeps tests and init independent of its edits, and honours --port", async () => {
    // A fresh clone has config.yaml at the top: tracked, not made by an install step.
    expect(repoFiles()).toContain("config.yaml");
    const template = readFileSync(join(copy, "internal/config/config-template.yaml"), "utf8");
    // The owner's edit (written, never read back by any test): another port and a secret.
    const edited = template.replace(/^ {2}port: 18790$/m, "  port: 18999");
    expect(edited).not.toBe(template);
    writeFileSync(join(copy, "config.yaml"), `${edited}\n# my notes: token sk-owner-secret\n`);

    // The suite's view of the built-in template does not see the edit.
    const vitest = join(REPO_ROOT, "node_modules/vitest/vitest.mjs");
    const suite = await run(process.execPath, [vitest, "run", "test/shipped-config.test.ts"]);
    expect(suite.code, suite.stdout + suite.stderr).toBe(0);

    // init writes the built-in template, not the owner's edited file.
    const init = await run(process.execPath, familiarArgs("init", "home"));
    expect(init).toMatchObject({ code: 0, stderr: "" });
    expect(readFileSync(join(copy, "home/config.yaml"), "utf8")).toBe(template);

    // FAMILIAR_PORT is seen by every command; a bad one names the variable.
    const port = await freePort();
    const check = await run(process.execPath, familiarArgs("config", "check"), {
      FAMILIAR_PORT: String(port),
    });
    expect(check.stdout).toBe(
      `config OK: ./config.yaml (gateway 127.0.0.1:${port}, no provider (echo model), channels: none)\n`,
    );
    const bad = await run(process.execPath, familiarArgs("config", "check"), { FAMILIAR_PORT: "80x" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("FAMILIAR_PORT (environment): expected an integer 1-65535");

    // `familiar run --port N` (what `npm start -- --port N` runs) serves on N, over the file's 18999.
    const daemon = spawn(process.execPath, familiarArgs("run", "--port", String(port)), {
      cwd: copy,
      env: childEnv(),
      stdio: "pipe",
    });
    children.push(daemon);
    let log = "";
    daemon.stdout.on("data", (b: Buffer) => (log += b.toString()));
    await waitHealthy(port, daemon);
    expect(log).toContain(`gateway listening on http://127.0.0.1:${port}`);

    // A second daemon on the same port: one line naming the holder and every way to change the port.
    const clash = await run(
      process.execPath,
      familiarArgs("run", "--config", "home/config.yaml", "--port", String(port)),
    );
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain(
      `gateway port ${port} on 127.0.0.1 is already in use by pid ${daemon.pid} (`,
    );
    expect(clash.stderr).toContain(`(${process.execPath} --import `);
    expect(clash.stderr).toContain(
      "choose another port with `familiar run --port N`, FAMILIAR_PORT=N or gateway.port in",
    );
    const badFlag = await run(process.execPath, familiarArgs("run", "--port", "0"));
    expect(badFlag).toMatchObject({
      code: 1,
      stderr: 'familiar: --port: expected an integer 1-65535, got "0"\n',
    });
  }, 120_000);
});
