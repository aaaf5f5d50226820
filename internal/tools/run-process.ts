/**
 * Running one command as a child process for the exec tool.
 *
 * Invariants:
 * - the child is spawned `detached` (its own process group); on timeout or abort the WHOLE group is
 *   sent SIGTERM, then SIGKILL after a grace period, so background grandchildren are not orphaned
 *   (inside the sandbox, bwrap's `--die-with-parent` and the PID namespace take the rest down);
 * - output (stdout and stderr interleaved) is capped at `maxOutput`, keeping the head and the tail
 *   (errors tend to be at the end).
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { closeAll } from "./sandbox/pinned-fds.js";
import { ToolError } from "./tool.js";

const KILL_GRACE_MS = 2000;

/** Environment variable names that look like credentials (API keys, bot tokens, passwords). */
const SECRET_ENV = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL/i;

/**
 * The daemon's environment without its secrets: config.yaml pulls API keys and bot tokens from the
 * environment (`${OPENAI_API_KEY}`), and a command's output goes to the model and the chat.
 */
export function commandEnv(base: NodeJS.ProcessEnv, cwd: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base))
    if (!SECRET_ENV.test(k) && !k.startsWith("FAMILIAR_")) env[k] = v;
  env.PWD = cwd;
  return env;
}

/** Sends a signal to a whole process group, ignoring "already gone". */
function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* group already gone */
  }
}

class OutputBuffer {
  private head = "";
  private tail = "";
  private total = 0;
  constructor(private max: number) {}
  push(s: string): void {
    this.total += s.length;
    const half = Math.floor(this.max / 2);
    if (this.head.length < half) {
      const take = half - this.head.length;
      this.head += s.slice(0, take);
      s = s.slice(take);
    }
    if (s) this.tail = (this.tail + s).slice(-(this.max - half));
  }
  text(): string {
    const kept = this.head.length + this.tail.length;
    if (kept >= this.total) return this.head + this.tail;
    return `${this.head}\n[... ${this.total - kept} characters of output omitted ...]\n${this.tail}`;
  }
}

/** How a run ended and what it printed. */
export interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  reason?: "timeout" | "aborted";
}

/**
 * Runs one program (the shell, or bwrap wrapping the shell) and collects its output; not
 * policy-checked. Without an explicit invocation it is `/bin/sh -c command` with {@link commandEnv}.
 */
export function runShell(
  command: string,
  opts: {
    cwd: string;
    timeoutMs: number;
    maxOutput: number;
    signal: AbortSignal;
    invocation?: { file: string; args: string[]; env: NodeJS.ProcessEnv; fds?: number[] };
  },
): Promise<RunOutcome & { pid: number | undefined }> {
  return new Promise((resolvePromise, reject) => {
    const inv = opts.invocation ?? {
      file: "/bin/sh",
      args: ["-c", command],
      env: commandEnv(process.env, opts.cwd),
    };
    const extra = opts.invocation?.fds ?? [];
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(inv.file, inv.args, {
        cwd: opts.cwd,
        detached: true,
        stdio: ["ignore", "pipe", "pipe", ...extra],
        env: inv.env,
      }) as ChildProcessByStdio<null, Readable, Readable>;
    } finally {
      // The child holds its own copies now (or never will): ours must not leak.
      closeAll(extra);
    }
    const out = new OutputBuffer(opts.maxOutput);
    let reason: RunOutcome["reason"];
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let settled = false;
    const pid = child.pid;
    const stop = (why: "timeout" | "aborted"): void => {
      if (reason || !pid) return;
      reason = why;
      killGroup(pid, "SIGTERM");
      killTimer = setTimeout(() => killGroup(pid, "SIGKILL"), KILL_GRACE_MS);
      killTimer.unref();
    };
    const timer = setTimeout(() => stop("timeout"), opts.timeoutMs);
    const onAbort = (): void => stop("aborted");
    opts.signal.addEventListener("abort", onAbort, { once: true });
    child.stdout.setEncoding("utf8").on("data", (d: string) => out.push(d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => out.push(d));
    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", onAbort);
      // After the shell is gone, make sure nothing of a killed group survives.
      if (reason && pid) killGroup(pid, "SIGKILL");
      if (killTimer) clearTimeout(killTimer);
      resolvePromise({ ...(exited ?? { code: null, signal: null }), output: out.text(), reason, pid });
    };
    child.on("error", (err) => {
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", onAbort);
      reject(new ToolError("EXEC_SPAWN", `could not start the shell: ${err.message}`));
    });
    child.on("exit", (code, signal) => {
      exited = { code, signal };
      // A background process may keep our pipes open; do not wait on it forever.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, 500).unref();
    });
    child.on("close", finish);
    if (opts.signal.aborted) stop("aborted");
  });
}
