/**
 * The `claude-cli` engine (reference: StreamingCLIAgent): one long-lived
 * `claude -p --input-format stream-json --output-format stream-json --verbose` subprocess per session,
 * reaped after an idle TTL. Unlike the reference, the CLI's session id is persisted per session key, so
 * after a reap, a crash or a daemon restart the next turn resumes with `--resume <id>`. When the CLI
 * cannot resume (its copy of the session was lost, e.g. a SIGKILL before it flushed the last turn), the
 * turn falls back, once, to a fresh CLI session seeded with the conversation from Familiar's store.
 * Protocol details: docs/claude-cli.md.
 * Over 300 lines on purpose: the Claude Code stream-json protocol is one contract.
 */
import { estimatedUsage } from "../../models/provider-bill.js";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { setTimeout as delay } from "node:timers/promises";
import type { Engine } from "../host-types.js";
import type { AgentEvent } from "../../core/agent-events.js";
import type { LoopOutcome } from "../loop.js";
import { ZERO_USAGE, type Usage } from "../../models/types.js";
import { systemClock, type Clock } from "../../core/clock.js";
import { resolveCommand } from "./cli-engine.js";
import { parseClaudeLine, type ClaudeLine } from "./claude-stream.js";
import { imageBlocks, lastText, seedText, systemText } from "./claude-seed.js";
import { ClaudeSessionIds } from "./claude-session-ids.js";
import { closeAll } from "../../tools/sandbox/pinned-fds.js";
import type { ClaudeCliOptions, Proc } from "./claude-cli-types.js";

export type { ClaudeCliOptions } from "./claude-cli-types.js";

export class ClaudeCliEngine {
  private procs = new Map<string, Proc>();
  private ids: ClaudeSessionIds;
  private bin: string;
  private clock: Clock;

  constructor(private opts: ClaudeCliOptions) {
    this.bin = resolveCommand(opts.command);
    this.ids = new ClaudeSessionIds(opts.db);
    this.clock = opts.clock ?? systemClock;
  }

  /** `/new`: forget the CLI session of a key and stop its subprocess. */
  reset(sessionKey: string): void {
    this.ids.clear(sessionKey);
    this.kill(sessionKey);
  }

  /** Stops every subprocess (daemon shutdown). */
  close(): void {
    for (const key of [...this.procs.keys()]) this.kill(key);
  }

  /** Number of live subprocesses. */
  liveCount(): number {
    return this.procs.size;
  }

  private kill(sessionKey: string): void {
    const p = this.procs.get(sessionKey);
    if (!p) return;
    this.procs.delete(sessionKey);
    if (p.idleTimer) this.clock.clearTimeout(p.idleTimer);
    p.dead = true;
    p.child.kill("SIGTERM");
  }

  /**
   * Starts a subprocess. `sessionKey` undefined = a one-shot process for an ephemeral turn: no
   * resume, nothing persisted, not kept in the map (killed when the turn ends).
   */
  private spawnFor(sessionKey: string | undefined, model?: string, systemPrompt?: string): Proc {
    if (sessionKey !== undefined && this.procs.has(sessionKey)) this.kill(sessionKey);
    const args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"];
    if (this.opts.partialMessages) args.push("--include-partial-messages");
    const m = model ?? this.opts.model;
    if (m) args.push("--model", m);
    if (this.opts.mcpConfig) args.push("--mcp-config", this.opts.mcpConfig);
    const system = systemPrompt ?? this.opts.systemPrompt;
    if (system) args.push("--append-system-prompt", system);
    const resume = sessionKey !== undefined ? this.ids.load(sessionKey) : undefined;
    if (resume) args.push("--resume", resume);
    args.push(...this.opts.extraArgs);
    const inv = this.opts.launch?.(this.bin, args) ?? { file: this.bin, args, env: process.env };
    const extra = inv.fds ?? [];
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(inv.file, inv.args, {
        cwd: this.opts.cwd,
        env: inv.env,
        stdio: ["pipe", "pipe", "pipe", ...extra],
      }) as unknown as ChildProcessWithoutNullStreams;
    } finally {
      closeAll(extra);
    }
    const rl = createInterface({ input: child.stdout, crlfDelay: Infinity });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("close", (code, signal) => resolve({ code, signal }));
      child.once("error", () => resolve({ code: null, signal: null }));
    });
    const proc: Proc = {
      child,
      lines: rl[Symbol.asyncIterator](),
      busy: false,
      dead: false,
      stderr: "",
      model: m,
      system,
      costSoFar: 0,
      resumed: resume,
      turns: 0,
      sawInit: false,
      closed,
    };
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      proc.stderr = (proc.stderr + d).slice(-2000);
    });
    child.on("exit", (code, signal) => {
      proc.dead = true;
      if (sessionKey !== undefined && this.procs.get(sessionKey) === proc) this.procs.delete(sessionKey);
      this.opts.logger.info({ sessionKey, code, signal }, "claude-cli subprocess exited");
    });
    child.on("error", (err) => {
      proc.dead = true;
      proc.stderr += err.message;
    });
    child.stdin.on("error", () => undefined);
    if (sessionKey !== undefined) this.procs.set(sessionKey, proc);
    this.opts.logger.info({ sessionKey, resume: resume ?? null }, "claude-cli subprocess started");
    return proc;
  }

  private armIdle(sessionKey: string, proc: Proc): void {
    if (proc.idleTimer) this.clock.clearTimeout(proc.idleTimer);
    proc.idleTimer = this.clock.setTimeout(() => {
      if (!proc.busy && this.procs.get(sessionKey) === proc) {
        this.opts.logger.info({ sessionKey }, "claude-cli subprocess idle: reaping");
        this.kill(sessionKey);
      }
    }, this.opts.idleTtlMs);
    proc.idleTimer.unref?.();
  }

  /**
   * True when `p` was started with `--resume` and the CLI refused it before doing anything: an error
   * result before any `init` line on the process's first turn, or no output at all and "No
   * conversation found" on stderr (older CLIs exit without a result line).
   */
  private async resumeFailed(
    p: Proc,
    final: Extract<ClaudeLine, { kind: "result" }> | undefined,
  ): Promise<boolean> {
    if (p.resumed === undefined || p.turns !== 1 || p.sawInit) return false;
    if (final) return final.isError;
    // stdout ended: the stderr lines may still be in flight.
    await Promise.race([p.closed, delay(2000, undefined, { ref: false })]);
    return /no conversation found/i.test(p.stderr);
  }

  /** The Engine function for the host. */
  engine(): Engine {
    return (loop) => this.run(loop);
  }

  private async *run(loop: Parameters<Engine>[0]): AsyncGenerator<AgentEvent, LoopOutcome> {
    const { runId } = loop;
    // An ephemeral turn (no stored session, e.g. a stateless /v1 call) gets a one-shot process with
    // the given history inlined: it must neither resume nor pollute a persistent CLI session.
    const ephemeral = loop.sessionId === "";
    const sessionKey = loop.sessionKey;
    const plain = lastText(loop.messages);
    const model = loop.modelRef?.split("/").slice(1).join("/") || undefined;
    // The host's system prompt for this agent (workspace identity files, the agent's own prompt or
    // prompt_file, origin; the time line left out as it changes every minute) goes to the subprocess.
    const system = systemText(loop.messages);
    let proc = ephemeral ? undefined : this.procs.get(sessionKey);
    const wanted = { model: model ?? this.opts.model, system: system ?? this.opts.systemPrompt };
    if (proc && !proc.busy && !proc.dead && (proc.model !== wanted.model || proc.system !== wanted.system)) {
      // The session's model changed (`/model`) or its prompt did (an edited SOUL.md, agent prompt or
      // prompt_file): a subprocess cannot switch either, so start one that resumes the same CLI session.
      this.opts.logger.info(
        { sessionKey, from: proc.model, to: wanted.model, promptChanged: proc.system !== wanted.system },
        proc.model !== wanted.model
          ? "claude-cli model changed: restarting"
          : "claude-cli prompt changed: restarting",
      );
      this.kill(sessionKey);
      proc = undefined;
    }
    if (proc?.busy) {
      // The host runs one turn per session key at a time; this only guards against misuse.
      const message = "The Claude CLI is still busy with the previous message of this session.";
      yield { type: "error", runId, code: "CLAUDE_CLI_BUSY", message };
      return {
        text: message,
        finishReason: "error",
        usage: { ...ZERO_USAGE },
        iterations: 0,
        error: { code: "CLAUDE_CLI_BUSY", message },
      };
    }
    // A kept subprocess may have died while idle (killed, OOM) without its exit being seen yet.
    const reused = proc !== undefined && !proc.dead;
    let cur: Proc =
      proc && !proc.dead ? proc : this.spawnFor(ephemeral ? undefined : sessionKey, model, system);
    const images = imageBlocks(loop.messages);
    // A process's first turn in a fresh CLI session (no `--resume`: an ephemeral turn, the first after
    // `/compact` or a failed resume) carries the stored conversation; otherwise the CLI has it.
    const lineFor = (p: Proc): string => {
      const text = p.turns === 0 && p.resumed === undefined ? seedText(loop.messages).text : plain;
      return JSON.stringify({
        type: "user",
        message: { role: "user", content: [{ type: "text", text }, ...images] },
      });
    };
    let streamed = "";
    let final = undefined as Extract<ClaudeLine, { kind: "result" }> | undefined;
    let usage: Usage = { ...ZERO_USAGE };
    let fellBack = false;
    for (let attempt = 0; ; attempt++) {
      const p = cur;
      p.busy = true;
      if (p.idleTimer) this.clock.clearTimeout(p.idleTimer);
      p.child.stdin.write(`${lineFor(p)}\n`);
      p.turns++;
      const onAbort = (): void => {
        // Claude Code has no in-band cancel: stop the subprocess; the next turn resumes the session.
        if (ephemeral) p.child.kill("SIGTERM");
        else this.kill(sessionKey);
      };
      if (loop.signal.aborted) onAbort();
      else loop.signal.addEventListener("abort", onAbort, { once: true });
      let seen = 0;
      let sawPartial = false;
      try {
        for (;;) {
          const next = await p.lines.next();
          if (next.done) break;
          if (next.value.trim() === "") continue;
          seen++;
          const parsed = parseClaudeLine(next.value);
          if (!parsed) {
            this.opts.logger.warn({ line: next.value.slice(0, 200) }, "claude-cli: malformed line skipped");
            continue;
          }
          if (parsed.sessionId && !ephemeral) this.ids.save(sessionKey, parsed.sessionId);
          switch (parsed.kind) {
            case "init":
              p.sawInit = true;
              break;
            case "partial_text":
              sawPartial = true;
              streamed += parsed.text;
              yield { type: "text_delta", runId, delta: parsed.text };
              break;
            case "partial_thinking":
              yield { type: "thinking_delta", runId, delta: parsed.text };
              break;
            case "assistant":
              if (parsed.thinking && !sawPartial)
                yield { type: "thinking_delta", runId, delta: parsed.thinking };
              for (const t of parsed.toolUses)
                yield { type: "tool_start", runId, callId: t.id, name: t.name, args: t.input };
              if (parsed.text && !sawPartial) {
                streamed += parsed.text;
                yield { type: "text_delta", runId, delta: parsed.text };
              }
              if (parsed.toolUses.length > 0 && parsed.text)
                yield { type: "iteration_text", runId, text: parsed.text };
              sawPartial = false;
              break;
            case "tool_result":
              for (const r of parsed.results)
                yield {
                  type: "tool_end",
                  runId,
                  callId: r.id,
                  name: r.name ?? "tool",
                  result: r.content,
                  isError: r.isError,
                  durationMs: 0,
                };
              break;
            case "result":
              final = parsed;
              break;
          }
          if (final) break;
        }
      } finally {
        loop.signal.removeEventListener("abort", onAbort);
        p.busy = false;
        if (ephemeral) p.child.kill("SIGTERM");
      }
      if (!fellBack && !ephemeral && !loop.signal.aborted && (await this.resumeFailed(p, final))) {
        // The CLI lost its copy of the session (the real CLI exits with `error_during_execution`,
        // "No conversation found"): continue, once, in a fresh CLI session given our stored copy.
        fellBack = true;
        const seed = seedText(loop.messages);
        const why = (final?.text || p.stderr.trim().split("\n").pop() || final?.subtype || "").slice(0, 200);
        this.opts.logger.warn(
          { sessionKey, cliSessionId: p.resumed, why, seeded: seed.included, omitted: seed.omitted },
          `claude-cli: resuming CLI session ${p.resumed ?? "?"} failed (${why}); answering in a fresh CLI session seeded with ${seed.included} stored message${seed.included === 1 ? "" : "s"}`,
        );
        this.ids.clear(sessionKey);
        final = undefined;
        streamed = "";
        cur = this.spawnFor(sessionKey, model, system);
        continue;
      }
      if (final || loop.signal.aborted || seen > 0 || attempt > 0 || !reused) break;
      // The kept subprocess was already dead: it never saw this message. Start a fresh one (it
      // resumes the stored CLI session) and send the message once more.
      this.opts.logger.warn({ sessionKey }, "claude-cli subprocess died while idle; restarting it");
      this.kill(sessionKey);
      cur = this.spawnFor(sessionKey, model, system);
    }
    const ended = cur;
    if (loop.signal.aborted) return { text: streamed, finishReason: "aborted", usage, iterations: 1 };
    if (!final) {
      if (!ephemeral) this.kill(sessionKey);
      // stdout ended: wait (briefly) for the exit status and the last stderr lines.
      const exit = await Promise.race([ended.closed, delay(2000, undefined, { ref: false })]);
      const status = exit ? (exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`) : "no exit";
      const why = ended.stderr.trim().split("\n").pop() || "no error output";
      const message = `The Claude CLI stopped unexpectedly (${status}: ${why}). It will be restarted on your next message.`;
      yield { type: "error", runId, code: "CLAUDE_CLI_CRASHED", message };
      return {
        text: message,
        finishReason: "error",
        usage,
        iterations: 1,
        error: { code: "CLAUDE_CLI_CRASHED", message },
      };
    }
    if (!ephemeral) this.armIdle(sessionKey, ended);
    // `total_cost_usd` restates the process's running total on every result: this turn's cost is the
    // difference to the previous one (a new process, e.g. after a reap or crash, starts again at 0).
    let cost: number | undefined;
    if (final.costUsd !== undefined) {
      cost = Math.max(0, final.costUsd - ended.costSoFar);
      ended.costSoFar = final.costUsd;
    }
    if (final.usage !== undefined) {
      usage = this.opts.normalizeUsage(final.usage);
      yield { type: "usage", runId, usage, provider: "claude-cli", model: final.model ?? "claude" };
      loop.hooks?.onUsage?.({
        usage,
        provider: "claude-cli",
        model: final.model ?? "claude",
        raw: final.usage,
        ...(cost !== undefined ? { cost } : {}),
      });
    } else if (!final.isError || cost !== undefined) {
      // No counts from the CLI: estimated from the text in and out, marked so, and still counted
      // (its own cost wins when it gave one).
      usage = estimatedUsage(
        { messages: [{ role: "user", content: lastText(loop.messages) }] },
        (final.text ?? "").length,
      );
      yield { type: "usage", runId, usage, provider: "claude-cli", model: final.model ?? "claude" };
      loop.hooks?.onUsage?.({
        usage,
        provider: "claude-cli",
        model: final.model ?? "claude",
        raw: undefined,
        estimated: true,
        ...(cost !== undefined ? { cost } : {}),
      });
    }
    if (final.isError) {
      const message = `Claude CLI error: ${final.text || final.subtype || "unknown error"}`;
      yield { type: "error", runId, code: "CLAUDE_CLI_ERROR", message };
      return {
        text: message,
        finishReason: "error",
        usage,
        iterations: 1,
        error: { code: "CLAUDE_CLI_ERROR", message },
      };
    }
    return {
      text: final.text ?? streamed,
      finishReason: "stop",
      usage,
      iterations: final.numTurns ?? 1,
      model: `claude-cli/${final.model ?? "claude"}`,
    };
  }
}
