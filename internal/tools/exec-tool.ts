/**
 * The `exec` tool: runs a shell command in the workspace under `tools.exec` policy.
 *
 * Invariants:
 * - the shell is spawned `detached` (its own process group); on timeout or abort the WHOLE group is
 *   sent SIGTERM, then SIGKILL after a grace period, so background grandchildren are not orphaned;
 * - output (stdout and stderr interleaved) is capped at `tools.exec.max_output_chars`, keeping the
 *   head and the tail (errors tend to be at the end);
 * - a command needing approval that is denied or expires is an error result, never a hang.
 */
import { spawn } from "node:child_process";
import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { evaluateExec } from "./exec-policy.js";
import { escapesBySymlink } from "./exec-escape.js";
import { defineTool, ToolError, type Tool, type ToolResult } from "./tool.js";

const schema = z
  .object({
    command: z.string().min(1).describe("shell command (sh -c), run in the workspace folder"),
    timeout_s: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("timeout in seconds (at most the configured tools.exec.timeout_s)"),
  })
  .strict();

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

interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  reason?: "timeout" | "aborted";
}

/** Runs one command; exported for tests and other modules (not policy-checked). */
export function runShell(
  command: string,
  opts: { cwd: string; timeoutMs: number; maxOutput: number; signal: AbortSignal },
): Promise<RunOutcome & { pid: number | undefined }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: opts.cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: commandEnv(process.env, opts.cwd),
    });
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

/** Formats a run as the model sees it. */
function formatRun(r: RunOutcome, timeoutS: number): ToolResult {
  if (r.reason === "timeout")
    return {
      isError: true,
      content: `command timed out after ${timeoutS}s and was killed\n${r.output}`.trimEnd(),
    };
  if (r.reason === "aborted") return { isError: true, content: `command aborted\n${r.output}`.trimEnd() };
  const status = r.code !== null ? `exit code ${r.code}` : `killed by ${r.signal ?? "a signal"}`;
  return { content: `${status}\n${r.output || "(no output)"}`, isError: r.code !== 0 };
}

/** Builds the exec tool. */
export function createExecTool(config: () => Config): Tool<typeof schema> {
  return defineTool({
    name: "exec",
    group: "exec",
    description:
      "Run a shell command in the workspace and return its exit code and output. Commands outside the owner's allow list need the owner's approval.",
    schema,
    async execute(args, signal, ctx) {
      const cfg = config().tools.exec;
      const cwd = await realpath(resolve(ctx.workspace)).catch(() => resolve(ctx.workspace));
      let verdict = evaluateExec(args.command, cfg);
      // The allow list covers the workspace only: an argument that is a symlink out of it (`cat
      // link/secret`) makes the command a miss, like an absolute path does.
      if (
        verdict.action === "allow" &&
        cfg.security === "allowlist" &&
        (await escapesBySymlink(args.command, cwd))
      )
        verdict =
          cfg.ask === "off"
            ? { action: "deny", reason: "an argument resolves outside the workspace through a symlink" }
            : { action: "ask", reason: "an argument resolves outside the workspace through a symlink" };
      if (verdict.action === "deny") throw new ToolError("EXEC_DENIED", `refused: ${verdict.reason}`);
      if (verdict.action === "ask") {
        if (!ctx.replyTarget)
          throw new ToolError(
            "EXEC_NEEDS_APPROVAL",
            `refused: ${verdict.reason}, and this session has no channel to ask the owner on`,
          );
        const decision = await ctx.requestApproval({ kind: "exec", summary: `$ ${args.command}` });
        if (decision === "denied") throw new ToolError("EXEC_DENIED", "the owner denied this command");
        if (decision === "expired")
          throw new ToolError(
            "EXEC_APPROVAL_EXPIRED",
            "the approval request expired without an answer; not run",
          );
        if (signal.aborted) throw new ToolError("EXEC_ABORTED", "aborted");
      }
      const timeoutS = Math.min(args.timeout_s ?? cfg.timeout_s, cfg.timeout_s);
      const r = await runShell(args.command, {
        cwd,
        timeoutMs: timeoutS * 1000,
        maxOutput: cfg.max_output_chars,
        signal,
      });
      return formatRun(r, timeoutS);
    },
  });
}
