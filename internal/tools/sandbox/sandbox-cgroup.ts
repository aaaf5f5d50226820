/**
 * One memory cgroup per sandboxed command, so `total_memory_mb` bounds the command's processes
 * TOGETHER, its tmpfs pages (`/tmp`, `/dev/shm`) included: the kernel charges a tmpfs page to the
 * cgroup of the process that wrote it. Per-process limits (prlimit) alone let two processes, or one
 * process and a file in `/tmp`, each take the whole limit.
 *
 * Where it works: a cgroup v2 whose memory controller is enabled for the daemon's own cgroup's
 * children (the root cgroup of a container, or a delegated subtree), or a writable cgroup v1 memory
 * hierarchy (the daemon running as root). Elsewhere {@link probeCgroup} says why, the limit is the
 * documented best effort (per-process RLIMIT_DATA plus the sized `/tmp`), and `familiar doctor` and
 * the start-up log say which one is live.
 *
 * The process enters the cgroup before bwrap starts: the command runs through a two-line trampoline
 * (`echo $$ > cgroup.procs && exec bwrap ...`), so nothing it forks is ever outside.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Invocation } from "./sandbox-command.js";

/** Where command cgroups are made, or why they cannot be. */
export interface CgroupSupport {
  ok: boolean;
  version?: 1 | 2;
  /** The folder new cgroups are made in. */
  base?: string;
  problem?: string;
}

/** Reads /proc/self/cgroup and the hierarchy under `root` (a parameter for tests). */
export function findCgroupBase(selfCgroup: string, root = "/sys/fs/cgroup"): CgroupSupport {
  const lines = selfCgroup.split("\n").filter(Boolean);
  const v1 = lines.map((l) => l.split(":")).find((p) => p[1]?.split(",").includes("memory"));
  if (v1 && existsSync(join(root, "memory"))) {
    const base = join(root, "memory", v1[2] ?? "/");
    return tryBase(base, 1);
  }
  const v2 = lines.map((l) => l.split(":")).find((p) => p[0] === "0" && p[1] === "");
  if (v2) {
    const base = join(root, v2[2] ?? "/");
    const controllers = read(join(base, "cgroup.controllers"));
    if (!controllers?.split(/\s+/).includes("memory"))
      return { ok: false, problem: `the memory controller is not available in ${base}` };
    if (!read(join(base, "cgroup.subtree_control"))?.split(/\s+/).includes("memory")) {
      try {
        writeFileSync(join(base, "cgroup.subtree_control"), "+memory");
      } catch (err) {
        return {
          ok: false,
          problem: `cannot enable the memory controller below ${base} (${(err as NodeJS.ErrnoException).code ?? "error"}); delegate a cgroup subtree to the daemon to count a command's memory as a whole`,
        };
      }
    }
    return tryBase(base, 2);
  }
  return { ok: false, problem: "no cgroup memory controller found in /proc/self/cgroup" };
}

function read(p: string): string | undefined {
  try {
    return readFileSync(p, "utf8").trim();
  } catch {
    return undefined;
  }
}

function tryBase(base: string, version: 1 | 2): CgroupSupport {
  const probe = join(base, `familiar-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return { ok: true, version, base };
  } catch (err) {
    return {
      ok: false,
      problem: `cannot create cgroups in ${base} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    };
  }
}

let cached: CgroupSupport | undefined;

/** Probes once per process. */
export function probeCgroup(): CgroupSupport {
  if (process.platform !== "linux") return { ok: false, problem: "cgroups need Linux" };
  cached ??= findCgroupBase(read("/proc/self/cgroup") ?? "");
  return cached;
}

/** A cgroup made for one command. */
export interface CommandCgroup {
  /** The file a process writes its pid to, to enter. */
  procs: string;
  /** True when the limit was reached (a write or allocation refused, or a process killed). */
  hitLimit(): boolean;
  /** Removes the cgroup (after the command's processes are gone); never throws. */
  remove(): void;
}

let seq = 0;

/** Makes a cgroup limited to `limitMb` (memory and swap), or undefined when cgroups are unavailable. */
export function createCommandCgroup(support: CgroupSupport, limitMb: number): CommandCgroup | undefined {
  if (!support.ok || !support.base) return undefined;
  const dir = join(support.base, `familiar-cmd-${process.pid}-${++seq}`);
  const bytes = String(limitMb * 1024 * 1024);
  try {
    mkdirSync(dir);
    if (support.version === 2) {
      writeFileSync(join(dir, "memory.max"), bytes);
      // Swapped-out tmpfs pages would otherwise escape the limit.
      if (existsSync(join(dir, "memory.swap.max"))) writeFileSync(join(dir, "memory.swap.max"), "0");
    } else {
      writeFileSync(join(dir, "memory.limit_in_bytes"), bytes);
      const memsw = join(dir, "memory.memsw.limit_in_bytes");
      if (existsSync(memsw)) writeFileSync(memsw, bytes);
    }
  } catch {
    removeDir(dir);
    return undefined;
  }
  const hitLimit = (): boolean => {
    if (support.version === 1)
      // Kernels differ in which counter they move (failcnt, memsw.failcnt, the OOM kill count): any.
      return (
        ["memory.failcnt", "memory.memsw.failcnt"].some((f) => Number(read(join(dir, f)) ?? "0") > 0) ||
        /^oom_kill [1-9]/m.test(read(join(dir, "memory.oom_control")) ?? "") ||
        Number(read(join(dir, "memory.max_usage_in_bytes")) ?? "0") >= Number(bytes)
      );
    const events = read(join(dir, "memory.events")) ?? "";
    return /^(max|oom|oom_kill) [1-9]/m.test(events);
  };
  return { procs: join(dir, "cgroup.procs"), hitLimit, remove: () => removeDir(dir) };
}

/** Tries to remove a command's cgroup for this long before leaving it (it is empty and costs little). */
const REMOVE_TRIES = 50;

/**
 * Removes a cgroup once its last process is gone: the PID namespace's processes are still being
 * reaped for a moment after bwrap exits, so a busy cgroup is retried (its stragglers killed) in the
 * background rather than left behind.
 */
function removeDir(dir: string, tries = REMOVE_TRIES): void {
  try {
    rmdirSync(dir);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || tries <= 0) return;
  }
  killAll(dir);
  setTimeout(() => removeDir(dir, tries - 1), 200).unref();
}

/** SIGKILLs what is left in a cgroup (cgroup.kill on v2, each listed pid on v1). */
function killAll(dir: string): void {
  if (existsSync(join(dir, "cgroup.kill"))) {
    try {
      writeFileSync(join(dir, "cgroup.kill"), "1");
      return;
    } catch {
      /* fall through to the pid list */
    }
  }
  for (const pid of (read(join(dir, "cgroup.procs")) ?? "").split("\n").filter(Boolean))
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      /* already gone */
    }
}

/** Exit status of the trampoline when the process could not enter its cgroup (the command did not run). */
export const CGROUP_ENTER_FAILED = 125;

/** `inv` started through a trampoline that first moves itself into `cg`. */
export function inCgroup(inv: Invocation, cg: CommandCgroup): Invocation {
  return {
    ...inv,
    file: "/bin/sh",
    args: ["-c", `echo $$ > "$0" || exit ${CGROUP_ENTER_FAILED}; exec "$@"`, cg.procs, inv.file, ...inv.args],
  };
}
