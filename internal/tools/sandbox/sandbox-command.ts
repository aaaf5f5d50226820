/**
 * Turns "run this program on the desk" into the bwrap invocation that does it inside the
 * sandbox, from `tools.exec.sandbox` and the paths that must stay out of sight.
 */
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { Config } from "../../config/schema.js";
import { bwrapArgs, sandboxEnv, type SandboxSpec } from "./bwrap-args.js";
import { ensureDesk } from "../../workspace/zones.js";
import { openBinds } from "./pinned-fds.js";
import type { SandboxStatus } from "./sandbox-probe.js";

/** A program and its arguments plus the environment to start it with. */
export interface Invocation {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Descriptors the child gets as fd 3, 4, ... (the runner closes its copies after spawning). */
  fds?: number[];
}

/** `~/x` → the daemon user's home joined with `x`. */
export function expandHome(p: string): string {
  return p.startsWith("~/") ? join(homedir(), p.slice(2)) : resolve(p);
}

function within(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}

/**
 * What of a program outside the system folders to show read-only: its folder (an npm package or a
 * Node install needs its siblings), unless that folder is the owner's home, the data dir or above
 * either (a `command: ~/tool`): then the file alone. Undefined when it cannot be resolved.
 */
export function programRoot(program: string, dataDir: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(program);
  } catch {
    return undefined;
  }
  const dir = dirname(real);
  const covers = (p: string): boolean => {
    const rel = relative(dir, p);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };
  return covers(homedir()) || covers(resolve(dataDir)) || dir === "/" ? real : dir;
}

/** Options of one sandbox beyond `tools.exec.sandbox`. */
export interface SandboxOptions {
  /** Real path of the workspace. */
  workspace: string;
  network: boolean;
  /** Daemon paths never to show (the config file); the data dir and home are always added. */
  hide: readonly string[];
  /** CPU seconds (the command's timeout). */
  cpuS: number;
  /** More paths bound read-only (a CLI engine's program), masked like the configured ones. */
  extraRo?: readonly string[];
  /** Paths inside the workspace or desk masked last (labelled data a clean session must not see). */
  masks?: readonly string[];
  /**
   * The real absolute folder inside the desk the command works in and may write, instead of the whole
   * desk (a shared chat's own desk; the caller made it through the workspace door).
   */
  desk?: string;
}

/** The sandbox spec for one command under the current config. */
export function sandboxSpec(cfg: Config, status: SandboxStatus, o: SandboxOptions): SandboxSpec {
  const sb = cfg.tools.exec.sandbox;
  const ro = [...sb.ro.map(expandHome), ...(o.extraRo ?? [])];
  const rw = sb.rw.map(expandHome);
  const roots = [o.workspace, ...ro, ...rw];
  // Only what a bound folder would show needs masking; the rest is not in the sandbox at all.
  const hide = [resolve(cfg.data_dir), homedir(), ...o.hide.map((p) => resolve(p))].filter((p) =>
    roots.some((r) => within(r, p)),
  );
  // The desk is the one writable place; a missing one is made, a link at its name moved aside.
  const desk = o.desk ?? ensureDesk(o.workspace).desk;
  return {
    workspace: o.workspace,
    desk,
    network: o.network,
    ro,
    rw,
    hide,
    pins: [desk],
    readOnly: [],
    ...(o.masks?.length ? { masks: o.masks } : {}),
    limits: {
      cpuS: o.cpuS,
      memoryMb: sb.memory_mb,
      processes: sb.max_processes,
      fileMb: sb.max_file_mb,
      tmpMb: sb.tmp_mb,
    },
    prlimit: status.prlimit,
    ...(status.features ? { features: status.features } : {}),
  };
}

/**
 * The bwrap invocation running `argv` in the sandbox (status must be `ok`). With `passFds` the desk
 * is opened here and handed to bwrap as a descriptor (see pinned-fds.ts);
 * the caller must spawn with `fds` or close them.
 */
export function sandboxInvocation(
  status: SandboxStatus,
  spec: SandboxSpec,
  argv: readonly string[],
  opts: { passFds?: boolean } = {},
): Invocation {
  if (!status.ok || !status.bwrap) throw new Error("sandbox is not available");
  const env = sandboxEnv(process.env, spec.desk);
  if (!opts.passFds) return { file: status.bwrap, args: bwrapArgs(spec, argv), env };
  const opened = openBinds(spec.workspace, spec.pins, spec.readOnly, 3);
  const args = bwrapArgs({ ...spec, pinFds: opened.pinFds, readOnlyFds: opened.readOnlyFds }, argv);
  return { file: status.bwrap, args, env, fds: opened.fds };
}
