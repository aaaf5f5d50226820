/**
 * The daemon's runtime settings, in one place: however `familiar run` is started (`npm start`, the
 * systemd unit, a global install, a container's entry point, plain `node dist/bundle/familiar.js`),
 * it runs with the same V8 flags and glibc malloc settings.
 *
 * Why a re-exec: V8 sizes its heap and glibc reads its malloc settings when the process starts, before
 * any of our code runs, so they cannot be applied from inside. The entry replaces its own process
 * image once (`process.execve`: same pid, same stdio, so systemd, signals and exit codes see one
 * process and nothing needs forwarding) with the flags and environment added. Measured cost: one more
 * bare Node start-up before any module loads (BENCHMARKS.md, "Start-up").
 *
 * Invariants:
 * - at most one re-exec: the child carries {@link TUNED_ENV}=1 and is never re-executed;
 * - what the owner set wins: a flag already in `execArgv` or `NODE_OPTIONS`, or a malloc variable
 *   already in the environment, is left as it is;
 * - only the daemon (`run`, the default command) is re-executed; short CLI commands are not.
 *
 * The settings (BENCHMARKS.md and issue 26 say why each one pays):
 * - `--max-old-space-size=<heap MB>` (default {@link DEFAULT_HEAP_MB}; `familiar run --heap-mb N` or
 *   `FAMILIAR_HEAP_MB=N` raises it on a bigger machine, 0 removes the cap): without a cap V8 lets
 *   garbage grow the heap under load and keeps it;
 * - `--max-semi-space-size=2`: keeps the young generation at 2 MB per half;
 * - `MALLOC_ARENA_MAX=2`: two malloc arenas instead of one per thread (GC helper threads otherwise
 *   each keep their own arena's freed memory);
 * - `MALLOC_TRIM_THRESHOLD_=131072`: glibc returns the free top of its heap once 128 KB of it is free.
 */
/** Set in the re-executed process; its presence means "tuned already, do not re-exec". */
export const TUNED_ENV = "FAMILIAR_TUNED";
/** Heap cap in MB from the environment (the `--heap-mb` flag wins). */
export const HEAP_ENV = "FAMILIAR_HEAP_MB";
/** The default V8 old-space cap: the daemon's live heap is ~25 MB. */
export const DEFAULT_HEAP_MB = 96;

/** What the re-executed process gets on top of what this one has. */
export interface TuningPlan {
  /** Node flags to add after the current `execArgv`. */
  readonly flags: string[];
  /** Environment variables to add. */
  readonly env: Record<string, string>;
}

/** The process facts the plan depends on (a parameter so tests need no real process). */
export interface ProcessFacts {
  /** `process.argv.slice(2)`: the CLI arguments. */
  readonly args: readonly string[];
  readonly execArgv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** A typed error for a bad `--heap-mb` / FAMILIAR_HEAP_MB. */
export class HeapSettingError extends Error {
  readonly code = "HEAP_MB_INVALID";
}

/** True when the arguments start the daemon: `run`, or no command at all (`run` is the default). */
export function startsDaemon(args: readonly string[]): boolean {
  const first = args[0];
  if (first === undefined) return true;
  if (first === "run") return true;
  if (!first.startsWith("-")) return false;
  // `familiar --config x` runs the daemon; `familiar --help` / `--version` do not.
  return !["-h", "--help", "-v", "--version"].includes(first);
}

/** The heap cap in MB: `--heap-mb N` / `--heap-mb=N`, else FAMILIAR_HEAP_MB, else the default. */
export function heapMb(args: readonly string[], env: ProcessFacts["env"]): number {
  let raw: string | undefined;
  let from = "--heap-mb";
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--heap-mb") raw = args[i + 1] ?? "";
    else if (a.startsWith("--heap-mb=")) raw = a.slice("--heap-mb=".length);
  }
  if (raw === undefined && env[HEAP_ENV] !== undefined) {
    raw = env[HEAP_ENV];
    from = HEAP_ENV;
  }
  if (raw === undefined) return DEFAULT_HEAP_MB;
  const n = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || (n !== 0 && n < 32) || n > 1_048_576)
    throw new HeapSettingError(
      `${from}: expected a heap size in MB (32 or more, or 0 for no cap), got ${JSON.stringify(raw)}`,
    );
  return n;
}

/** What to add for the daemon, or null when nothing is missing or this is not the daemon. */
export function tuningPlan(p: ProcessFacts): TuningPlan | null {
  if (p.env[TUNED_ENV] === "1" || !startsDaemon(p.args)) return null;
  const nodeOptions = (p.env.NODE_OPTIONS ?? "").split(/\s+/);
  const has = (flag: string): boolean =>
    [...p.execArgv, ...nodeOptions].some((a) => a === flag || a.startsWith(`${flag}=`));
  const flags: string[] = [];
  const heap = heapMb(p.args, p.env);
  if (heap > 0 && !has("--max-old-space-size")) flags.push(`--max-old-space-size=${heap}`);
  if (!has("--max-semi-space-size")) flags.push("--max-semi-space-size=2");
  const env: Record<string, string> = {};
  if (p.env.MALLOC_ARENA_MAX === undefined) env.MALLOC_ARENA_MAX = "2";
  if (p.env.MALLOC_TRIM_THRESHOLD_ === undefined) env.MALLOC_TRIM_THRESHOLD_ = "131072";
  if (flags.length === 0 && Object.keys(env).length === 0) return null;
  return { flags, env };
}

/**
 * Re-executes this process once with the daemon's settings when any is missing. Returns "here" when
 * there is nothing to do (the caller goes on in this process). Where `process.execve` does not exist
 * (Windows), runs the tuned process as a child instead, forwarding signals and its exit code, and
 * returns "child": the caller must then do nothing more.
 */
export async function applyRuntimeTuning(): Promise<"here" | "child"> {
  const plan = tuningPlan({ args: process.argv.slice(2), execArgv: process.execArgv, env: process.env });
  if (!plan) return "here";
  const args = [...process.execArgv, ...plan.flags, ...process.argv.slice(1)];
  const env = { ...process.env, ...plan.env, [TUNED_ENV]: "1" };
  if (typeof process.execve === "function") {
    // Does not return: the process image is replaced (same pid).
    process.execve(process.execPath, [process.execPath, ...args], env);
  }
  // Loaded only here: the usual path (execve) should not pay for child_process.
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, args, { stdio: "inherit", env });
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => child.kill(sig));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return "child";
}
