/**
 * The `cli` engine (reference: CLIAgent): a fresh subprocess per call, `command [args...] <message>`,
 * with a timeout, an output cap and a kill of the whole process group on timeout or abort.
 * The command is resolved on PATH when the engine is built, so it works under systemd's minimal PATH
 * as long as the daemon's own environment could find it.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { accessSync, constants } from "node:fs";
import { basename, delimiter, isAbsolute, join } from "node:path";
import type { Engine } from "../host-types.js";
import type { LoopOutcome } from "../loop.js";
import { ZERO_USAGE } from "../../models/types.js";
import { estimatedUsage } from "../../models/provider-bill.js";
import { systemClock, type Clock } from "../../core/clock.js";
import type { AgentEvent } from "../../core/agent-events.js";
import type { Launch } from "./engine-launch.js";
import { closeAll } from "../../tools/sandbox/pinned-fds.js";

export class CliEngineError extends Error {
  constructor(
    readonly code: "CLI_NOT_FOUND" | "CLI_FAILED" | "CLI_TIMEOUT",
    message: string,
  ) {
    super(message);
    this.name = "CliEngineError";
  }
}

/** Resolves a command on PATH (or checks an absolute/relative path). Throws CLI_NOT_FOUND. */
export function resolveCommand(command: string, envPath = process.env.PATH ?? ""): string {
  const candidates =
    isAbsolute(command) || command.includes("/")
      ? [command]
      : envPath
          .split(delimiter)
          .filter(Boolean)
          .map((d) => join(d, command));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      /* next */
    }
  }
  throw new CliEngineError(
    "CLI_NOT_FOUND",
    `command "${command}" was not found on PATH (${envPath || "empty PATH"})`,
  );
}

export interface CliEngineOptions {
  command: string;
  args: string[];
  timeoutMs: number;
  maxOutputChars: number;
  cwd: string;
  /** Timer source for the timeout (the daemon's clock; a FakeClock in tests). */
  clock?: Clock;
  /** PATH to resolve `command` on; the daemon's own PATH by default. */
  path?: string;
  /** How the program is started (engine-launch.ts); without it, with the daemon's environment. */
  launch?: Launch;
}

/** Builds a `cli` engine for one agent. */
export function createCliEngine(opts: CliEngineOptions): Engine {
  const bin = resolveCommand(opts.command, opts.path);
  const clock = opts.clock ?? systemClock;
  return async function* cliEngine(loop): AsyncGenerator<AgentEvent, LoopOutcome> {
    const last = [...loop.messages].reverse().find((m) => m.role === "user" || m.role === "system");
    const message =
      typeof last?.content === "string"
        ? last.content
        : (last?.content ?? []).map((p) => ("text" in p ? p.text : "")).join(" ");
    const inv = opts.launch?.(bin, [...opts.args, message]) ?? {
      file: bin,
      args: [...opts.args, message],
      env: process.env,
    };
    const extra = inv.fds ?? [];
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(inv.file, inv.args, {
        cwd: opts.cwd,
        env: inv.env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe", ...extra],
      }) as ChildProcessByStdio<null, Readable, Readable>;
    } finally {
      closeAll(extra);
    }
    let out = "";
    let err = "";
    let truncated = false;
    const queue: string[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    let exitCode: number | null = null;
    let timedOut = false;
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    };
    const timer = clock.setTimeout(() => {
      timedOut = true;
      killGroup();
    }, opts.timeoutMs);
    const onAbort = (): void => killGroup();
    if (loop.signal.aborted) killGroup();
    else loop.signal.addEventListener("abort", onAbort, { once: true });
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      if (out.length >= opts.maxOutputChars) {
        truncated = true;
        return;
      }
      const room = opts.maxOutputChars - out.length;
      if (d.length > room) truncated = true;
      const piece = d.slice(0, room);
      out += piece;
      queue.push(piece);
      wake?.();
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      if (err.length < 4000) err += d;
    });
    child.on("close", (code) => {
      exitCode = code;
      done = true;
      wake?.();
    });
    child.on("error", (e) => {
      err += e.message;
      done = true;
      wake?.();
    });
    try {
      while (!done || queue.length > 0) {
        const piece = queue.shift();
        if (piece !== undefined) {
          yield { type: "text_delta", runId: loop.runId, delta: piece };
          continue;
        }
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    } finally {
      clock.clearTimeout(timer);
      loop.signal.removeEventListener("abort", onAbort);
      // A consumer that stops early (return/throw) must not leave the process group running.
      if (!done) killGroup();
    }
    const text = out.trim() + (truncated ? `\n[output truncated at ${opts.maxOutputChars} characters]` : "");
    if (loop.signal.aborted)
      return { text, finishReason: "aborted", usage: { ...ZERO_USAGE }, iterations: 1 };
    if (timedOut || exitCode !== 0) {
      const message = timedOut
        ? `${opts.command} timed out after ${Math.round(opts.timeoutMs / 1000)} s`
        : `${opts.command} exited with code ${exitCode}: ${err.trim().slice(0, 500)}`;
      yield { type: "error", runId: loop.runId, code: timedOut ? "CLI_TIMEOUT" : "CLI_FAILED", message };
      return {
        text: text || message,
        finishReason: "error",
        usage: { ...ZERO_USAGE },
        iterations: 1,
        error: { code: timedOut ? "CLI_TIMEOUT" : "CLI_FAILED", message },
      };
    }
    // The program reports no usage: the call is estimated from the text in and out (marked so), and
    // priced at models.pricing["cli/<command>"] (0 for a program that costs nothing), else the default.
    const usage = estimatedUsage({ messages: [{ role: "user", content: message }] }, out.length);
    const model = basename(opts.command);
    yield { type: "usage", runId: loop.runId, usage, provider: "cli", model: `cli/${model}` };
    loop.hooks?.onUsage?.({ usage, provider: "cli", model, raw: undefined, estimated: true });
    return {
      text,
      finishReason: "stop",
      usage,
      iterations: 1,
      model: `cli/${opts.command}`,
    };
  };
}
