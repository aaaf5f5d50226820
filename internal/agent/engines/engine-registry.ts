/**
 * Builds the non-model engines (`cli`, `claude-cli`) per agent, lazily and cached by the agent's
 * engine settings, so a config edit (hot reload) rebuilds only what changed.
 */
import { existsSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { CoreContext } from "../../runtime/context.js";
import type { Engine } from "../host-types.js";
import type { AgentDef } from "../agents.js";
import { ZERO_USAGE, type Usage } from "../../models/types.js";
import { createCliEngine } from "./cli-engine.js";
import { ClaudeCliEngine } from "./claude-cli-engine.js";
import type { AgentEvent } from "../../core/agent-events.js";
import type { LoopOutcome } from "../loop.js";
import { parseSessionKey } from "../../session/keys.js";
import { probeSandbox, type SandboxStatus } from "../../tools/sandbox/sandbox-probe.js";
import { EngineLaunchError, engineLauncher, wantsSandbox } from "./engine-launch.js";
import { deskAllowed, settleDesk, watchDesk } from "../../tools/desk-guard.js";
import { deskOf, ensureDesk } from "../../workspace/zones.js";

const DEFAULT_IDLE_TTL_MS = 30 * 60_000;

export class EngineRegistry {
  private cli = new Map<string, { sig: string; engine: Engine }>();
  private claude = new Map<string, { sig: string; engine: ClaudeCliEngine }>();

  constructor(
    private ctx: CoreContext,
    private normalizeUsage: (raw: unknown) => Usage,
  ) {}

  /** The `engines` record for the agent host. */
  engines(): Record<string, Engine> {
    return {
      cli: (opts) => this.guarded(opts, "cli", (st) => this.cliFor(opts.agent, st)(opts)),
      "claude-cli": (opts) =>
        this.guarded(opts, "claude-cli", (st) => {
          const engine = this.claudeFor(opts.agent, st);
          const turn = engine.engine()(opts);
          // Delegated calls use a fresh session key each time: keeping their subprocess (and stored
          // CLI session) until the idle TTL would only pile up processes.
          return isSubagentKey(opts.sessionKey)
            ? closeAfter(turn, () => engine.reset(opts.sessionKey))
            : turn;
        }),
    };
  }

  /**
   * Probes the sandbox (once per process), then runs the turn; an agent whose CLI must run in the
   * sandbox where there is none gets one clear error turn instead of an unsandboxed program.
   */
  private async *guarded(
    opts: Parameters<Engine>[0],
    kind: "cli" | "claude-cli",
    run: (status: SandboxStatus | undefined) => AsyncGenerator<AgentEvent, LoopOutcome>,
  ): AsyncGenerator<AgentEvent, LoopOutcome> {
    const status = wantsSandbox(opts.agent) ? await probeSandbox() : undefined;
    // The CLI's working directory, sandboxed or not.
    ensureDesk(resolve(this.ctx.config().workspace));
    try {
      if (!status?.ok) return yield* run(status);
      // The desk fails closed for the CLI's own tools too (its Bash, its file edits): what the turn
      // left there that is not plain data is held and asked about, as after an exec command.
      const cfg = this.ctx.config();
      const desk = ensureDesk(realpathSync(resolve(cfg.workspace))).desk;
      const dataDir = existsSync(cfg.data_dir) ? realpathSync(cfg.data_dir) : resolve(cfg.data_dir);
      const watch = watchDesk(desk, deskAllowed(cfg));
      const outcome = yield* run(status);
      const planted = (await settleDesk(watch, dataDir, opts.toolContext)).outcome;
      if (!planted) return outcome;
      yield { type: "text_delta", runId: opts.runId, delta: planted.note };
      return { ...outcome, text: outcome.text + planted.note };
    } catch (err) {
      if (!(err instanceof EngineLaunchError)) throw err;
      const message = err.message;
      this.ctx.logger.error({ agent: opts.agent.id, kind }, message);
      yield { type: "error", runId: opts.runId, code: err.code, message };
      return {
        text: message,
        finishReason: "error",
        usage: { ...ZERO_USAGE },
        iterations: 0,
        error: { code: err.code, message },
      };
    }
  }

  /** What decides how an agent's CLI is launched (a change rebuilds its engine). */
  private launchSig(agent: AgentDef, status: SandboxStatus | undefined): unknown[] {
    const cfg = this.ctx.config();
    return [agent.sandbox, agent.source, agent.pass_env, status?.ok, cfg.data_dir, cfg.tools.exec.sandbox];
  }

  /** `/new` on a key: claude-cli sessions of every agent forget it. */
  reset(sessionKey: string): void {
    for (const e of this.claude.values()) e.engine.reset(sessionKey);
  }

  close(): void {
    for (const e of this.claude.values()) e.engine.close();
    this.claude.clear();
  }

  private cliFor(agent: AgentDef, status: SandboxStatus | undefined): Engine {
    const cfg = this.ctx.config();
    if (!agent.command) throw new Error(`agent "${agent.id}" has engine cli but no command`);
    const sig = JSON.stringify([
      agent.command,
      agent.args,
      agent.timeout_s,
      cfg.workspace,
      cfg.tools.exec.max_output_chars,
      ...this.launchSig(agent, status),
    ]);
    const hit = this.cli.get(agent.id);
    if (hit && hit.sig === sig) return hit.engine;
    const engine = createCliEngine({
      command: agent.command,
      args: agent.args,
      timeoutMs: (agent.timeout_s ?? 120) * 1000,
      maxOutputChars: cfg.tools.exec.max_output_chars,
      cwd: deskOf(cfg.workspace),
      clock: this.ctx.clock,
      launch: engineLauncher(cfg, agent, "cli", status),
    });
    this.cli.set(agent.id, { sig, engine });
    return engine;
  }

  private claudeFor(agent: AgentDef, status: SandboxStatus | undefined): ClaudeCliEngine {
    const cfg = this.ctx.config();
    const sig = JSON.stringify([
      agent.command,
      agent.model,
      agent.extra_args,
      agent.mcp_config,
      agent.idle_ttl,
      agent.system_prompt,
      cfg.workspace,
      ...this.launchSig(agent, status),
    ]);
    // A missing MCP file would only show up as an obscure CLI failure: name it here instead.
    const mcpConfig = agent.mcp_config ? resolve(cfg.workspace, agent.mcp_config) : undefined;
    if (mcpConfig && !existsSync(mcpConfig))
      throw new Error(`agent "${agent.id}": mcp_config file ${mcpConfig} does not exist`);
    const hit = this.claude.get(agent.id);
    if (hit && hit.sig === sig) return hit.engine;
    hit?.engine.close();
    const model = agent.model?.split("/").slice(1).join("/");
    const engine = new ClaudeCliEngine({
      command: agent.command ?? "claude",
      ...(model ? { model } : {}),
      extraArgs: agent.extra_args,
      ...(mcpConfig ? { mcpConfig } : {}),
      ...(agent.system_prompt ? { systemPrompt: agent.system_prompt } : {}),
      idleTtlMs: agent.idle_ttl ?? DEFAULT_IDLE_TTL_MS,
      partialMessages: true,
      cwd: deskOf(cfg.workspace),
      db: this.ctx.db,
      logger: this.ctx.logger,
      normalizeUsage: this.normalizeUsage,
      clock: this.ctx.clock,
      launch: engineLauncher(cfg, agent, "claude-cli", status, mcpConfig ? [mcpConfig] : []),
    });
    this.claude.set(agent.id, { sig, engine });
    return engine;
  }
}

/** Session keys of delegated turns (`agent:<id>:subagent:dm:<taskId>`): used once. */
function isSubagentKey(key: string): boolean {
  const k = parseSessionKey(key);
  return k.kind === "dm" && k.channel === "subagent";
}

/** Runs `done` when a turn's generator finishes, however it ends. */
async function* closeAfter(
  gen: AsyncGenerator<AgentEvent, LoopOutcome>,
  done: () => void,
): AsyncGenerator<AgentEvent, LoopOutcome> {
  try {
    return yield* gen;
  } finally {
    done();
  }
}
