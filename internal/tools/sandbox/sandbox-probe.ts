/**
 * Is the sandbox usable on this machine? Finds `bwrap` and runs `true` in a real sandbox once (the
 * answer is cached per process): a present but unusable bwrap (user namespaces disabled, a seccomp
 * profile refusing `clone`) is found here, not on the first command of a conversation.
 */
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { bwrapArgs, type BwrapFeatures, type SandboxSpec } from "./bwrap-args.js";

/** What the probe found. */
export interface SandboxStatus {
  ok: boolean;
  /** Absolute path of bwrap (when found). */
  bwrap?: string;
  /** `bubblewrap 0.8.0` */
  version?: string;
  /** Absolute path of prlimit (limits are applied only when found). */
  prlimit?: string;
  /** Why it is not usable, and what to do. */
  problem?: string;
  /** Optional bwrap features that work here (a sized /tmp, no nested user namespaces). */
  features?: BwrapFeatures;
}

/** The apt hint shown by doctor and the start-up log. */
export const INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)";

/**
 * First executable `name` on PATH; the usual system folders only when PATH is empty. PATH is the
 * owner's word on what is installed: a bwrap outside it is not used (and a PATH without bwrap is
 * how the "no sandbox on this machine" mode is tested).
 */
export function findExecutable(name: string, pathVar = process.env.PATH ?? ""): string | undefined {
  const given = pathVar.split(delimiter).filter(Boolean);
  const dirs = given.length > 0 ? given : ["/usr/bin", "/bin", "/usr/local/bin"];
  for (const d of dirs) {
    const p = join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

function run(file: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000, env: { PATH: "/usr/bin:/bin" } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}`.trim() || (err?.message ?? "") });
    });
  });
}

let cached: Promise<SandboxStatus> | undefined;

/** Probes once per process (or again with `fresh`). */
export function probeSandbox(opts: { fresh?: boolean } = {}): Promise<SandboxStatus> {
  if (!cached || opts.fresh) cached = doProbe();
  return cached;
}

async function doProbe(): Promise<SandboxStatus> {
  if (process.platform !== "linux")
    return { ok: false, problem: `bubblewrap needs Linux; this is ${process.platform}` };
  const bwrap = findExecutable("bwrap");
  if (!bwrap) return { ok: false, problem: `bwrap was not found; ${INSTALL_HINT}` };
  const prlimit = findExecutable("prlimit", "/usr/bin:/bin");
  const version = (await run(bwrap, ["--version"])).out.split("\n")[0] ?? "";
  const help = (await run(bwrap, ["--help"])).out;
  const offered: BwrapFeatures = {
    size: help.includes("--size"),
    disableUserns: help.includes("--disable-userns"),
  };
  const spec: SandboxSpec = {
    workspace: "/tmp",
    desk: "/tmp",
    network: false,
    ro: [],
    rw: [],
    hide: [],
    pins: [],
    readOnly: [],
    limits: { cpuS: 10, memoryMb: 1024, processes: 64, fileMb: 16, tmpMb: 16 },
    prlimit,
  };
  const probe = (features: BwrapFeatures) =>
    run(bwrap, bwrapArgs({ ...spec, features }, ["/bin/sh", "-c", "echo sandbox-ok"]));
  let features = offered;
  let r = await probe(features);
  // A kernel may refuse the user namespace `--disable-userns` needs (running as root in a container
  // without CAP_SYS_ADMIN over it): the sandbox still works without that one feature.
  if ((r.code !== 0 || !r.out.includes("sandbox-ok")) && features.disableUserns) {
    features = { ...features, disableUserns: false };
    r = await probe(features);
  }
  if (r.code !== 0 || !r.out.includes("sandbox-ok"))
    return {
      ok: false,
      bwrap,
      version,
      problem: `${bwrap} is installed but cannot start a sandbox (${r.out.slice(0, 200) || `exit ${r.code}`}); unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04)`,
    };
  return { ok: true, bwrap, version, features, ...(prlimit ? { prlimit } : {}) };
}
