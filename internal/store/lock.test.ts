import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquireInstanceLock, InstanceLockedError } from "./lock.js";

const ROOT = resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];
const dirs: string[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "familiar-lock-"));
  dirs.push(d);
  return d;
}

/** Starts a real process that holds the lock; resolves once it printed `locked <pid>`. */
function holdLockInChild(dataDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/hold-lock.ts", dataDir], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((res, rej) => {
    let out = "";
    let err = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("locked ")) res(child);
    });
    child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
    child.once("exit", (code) => rej(new Error(`lock holder exited early (${code}): ${err}`)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((res) => child.once("exit", () => res()));
}

/** The pid of a process that has certainly exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await exited(child);
  expect(child.pid).toBeGreaterThan(0);
  return child.pid!;
}

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGKILL");
      await exited(c);
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("instance lock", () => {
  it("writes our pid and removes the file on release", () => {
    const dir = tempDir();
    const lock = acquireInstanceLock(join(dir, "data"));
    expect(readFileSync(lock.file, "utf8")).toBe(String(process.pid));
    lock.release();
    expect(existsSync(lock.file)).toBe(false);
    lock.release(); // idempotent
  });

  it("refuses a second acquire while another live process holds it", async () => {
    const dir = tempDir();
    const child = await holdLockInChild(dir);
    let caught: unknown;
    try {
      acquireInstanceLock(dir);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InstanceLockedError);
    const e = caught as InstanceLockedError;
    expect(e.code).toBe("INSTANCE_LOCKED");
    expect(e.pid).toBe(child.pid);
    expect(e.message).toBe(
      `another familiar daemon (pid ${child.pid}) is already running on this data dir (${join(dir, "familiar.lock")})`,
    );
    // The holder's lock is untouched by the failed attempt.
    expect(readFileSync(join(dir, "familiar.lock"), "utf8")).toBe(String(child.pid));

    // A graceful stop releases it, and then we get it.
    child.kill("SIGTERM");
    await exited(child);
    expect({ code: child.exitCode, signal: child.signalCode }).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dir, "familiar.lock"))).toBe(false);
    acquireInstanceLock(dir).release();
  });

  it("refuses a second acquire within the same process", () => {
    const dir = tempDir();
    const lock = acquireInstanceLock(dir);
    expect(() => acquireInstanceLock(dir)).toThrow(InstanceLockedError);
    lock.release();
    acquireInstanceLock(dir).release();
  });

  it("takes over a stale lock left by a killed process", async () => {
    const dir = tempDir();
    const child = await holdLockInChild(dir);
    child.kill("SIGKILL");
    await exited(child);
    expect(readFileSync(join(dir, "familiar.lock"), "utf8")).toBe(String(child.pid));
    const lock = acquireInstanceLock(dir);
    expect(readFileSync(lock.file, "utf8")).toBe(String(process.pid));
    lock.release();
  });

  it.each([
    ["a dead pid", async () => String(await deadPid())],
    ["garbage", () => Promise.resolve("not a pid")],
    ["an empty file", () => Promise.resolve("")],
    ["our own pid from a previous life", () => Promise.resolve(String(process.pid))],
  ])("takes over a lock file holding %s", async (_name, content) => {
    const dir = tempDir();
    writeFileSync(join(dir, "familiar.lock"), await content());
    const lock = acquireInstanceLock(dir);
    expect(readFileSync(lock.file, "utf8")).toBe(String(process.pid));
    lock.release();
  });

  it("does not delete a lock that another process took over after us", () => {
    const dir = tempDir();
    const lock = acquireInstanceLock(dir);
    writeFileSync(lock.file, "1"); // pid 1 is alive: someone else owns it now
    lock.release();
    expect(readFileSync(join(dir, "familiar.lock"), "utf8")).toBe("1");
  });
});
