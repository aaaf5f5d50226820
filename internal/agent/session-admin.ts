/**
 * Session administration for the host: `/new` (reset), `/compact`, `/model` (session model override),
 * the model a session resolves to, and the facts `/status` shows. Compaction runs through the
 * session's queue, so it never races a running turn.
 */
import type { SessionInfo } from "../core/host.js";
import { ZERO_USAGE, type Usage } from "../core/usage.js";
import type { CoreContext } from "../runtime/context.js";
import { agentOfKey, parseSessionKey } from "../session/keys.js";
import { ECHO_MODEL_REF } from "../models/echo-model.js";
import type { Payer } from "../budgets/spend.js";
import { withPayer } from "../budgets/payer-scope.js";
import type { SessionStore } from "../session/session-store.js";
import { findAgent, type AgentDef } from "./agents.js";
import type { AgentHostDeps } from "./host-types.js";
import type { TurnQueue } from "./turn-queue.js";

export class SessionAdmin {
  private ctx: CoreContext;

  constructor(
    private deps: AgentHostDeps,
    private sessions: SessionStore,
    private queue: TurnQueue,
    /** The host's agent resolution (echo fallback included). */
    private agentFor: (id: string) => AgentDef,
  ) {
    this.ctx = deps.ctx;
  }

  reset(sessionKey: string, reason = "reset"): { sessionId: string } {
    const head = this.sessions.head(sessionKey);
    const agentId = head?.agent_id ?? this.keyAgent(sessionKey);
    const row = this.sessions.reset(sessionKey, agentId, reason);
    this.deps.onReset?.(sessionKey);
    this.ctx.bus.emit("session.changed", { sessionKey, sessionId: row.id, reason });
    return { sessionId: row.id };
  }

  async compact(
    sessionKey: string,
    instructions?: string,
  ): Promise<{ summary: string; tokensBefore: number; tokensAfter: number }> {
    const c = this.deps.compactor;
    if (!c) throw Object.assign(new Error("compaction is not available"), { code: "COMPACTION_UNAVAILABLE" });
    const session = this.sessions.head(sessionKey);
    if (!session)
      throw Object.assign(new Error(`no session for ${sessionKey}`), { code: "SESSION_NOT_FOUND" });
    const agent = this.agentFor(session.agent_id);
    const modelRef = session.model_override ?? agent.model ?? undefined;
    // Run through the session queue so compaction never races a running turn.
    // A /compact is paid by the session it compacts.
    const payer: Payer = { agentId: agent.id, channel: channelOfKey(sessionKey), sessionKey };
    const out = await this.queue
      .queueFor(sessionKey)
      .add(() =>
        withPayer(payer, () =>
          c.compactNow({ session, agent, modelRef, ...(instructions ? { instructions } : {}) }),
        ),
      );
    if (!out) throw new Error("compaction produced no result");
    if (agent.engine !== "model") this.deps.onCompacted?.(sessionKey);
    this.ctx.bus.emit("session.changed", { sessionKey, sessionId: out.successorId, reason: "compacted" });
    return out;
  }

  setSessionModel(sessionKey: string, model: string): void {
    const s = this.sessions.ensure(sessionKey, this.keyAgent(sessionKey));
    this.sessions.setModelOverride(s.id, model);
  }

  clearSessionModel(sessionKey: string): void {
    const s = this.sessions.head(sessionKey);
    if (s) this.sessions.setModelOverride(s.id, null);
  }

  /** The agent a session key names (`agent:<id>:...`), else the default agent. */
  private keyAgent(sessionKey: string): string {
    return agentOfKey(sessionKey) ?? this.ctx.config().agents.default;
  }

  resolveModel(sessionKey: string, agentId?: string): string {
    const cfg = this.ctx.config();
    // With no provider the echo model answers whatever a session or agent asks for (router.ts): say so.
    if (Object.keys(cfg.models.providers).length === 0) return ECHO_MODEL_REF;
    const s = this.sessions.head(sessionKey);
    if (s?.model_override) return s.model_override;
    const agent = findAgent(cfg, agentId ?? s?.agent_id ?? cfg.agents.default, this.deps.agentSources);
    if (agent?.model) return agent.model;
    if (cfg.models.primary) return cfg.models.primary;
    return "(no primary model configured)";
  }

  sessionInfo(sessionKey: string, agentId?: string): SessionInfo {
    const cfg = this.ctx.config();
    const s = this.sessions.head(sessionKey);
    const stats = s ? this.sessions.stats(s.id) : { messages: 0, chars: 0 };
    const usage = s
      ? (this.ctx.db
          .prepare<[string], Usage>(
            `SELECT COALESCE(SUM(input),0) AS input, COALESCE(SUM(output),0) AS output, COALESCE(SUM(cache_read),0) AS cacheRead,
             COALESCE(SUM(cache_write),0) AS cacheWrite, COALESCE(SUM(reasoning),0) AS reasoning, COALESCE(SUM(total),0) AS total
             FROM usage WHERE session_id = ?`,
          )
          .get(s.id) ?? { ...ZERO_USAGE })
      : { ...ZERO_USAGE };
    return {
      sessionKey,
      sessionId: s?.id ?? "",
      agentId: s?.agent_id ?? agentId ?? cfg.agents.default,
      model: this.resolveModel(sessionKey, agentId),
      ...(s?.model_override ? { modelOverride: s.model_override } : {}),
      messageCount: stats.messages,
      estimatedTokens: Math.ceil(stats.chars / 4),
      usage,
      createdAt: s?.created_at ?? 0,
      running: this.queue.isRunning(sessionKey),
      queued: this.queue.waiting(sessionKey),
    };
  }
}

/** The channel a session key belongs to (internal/session/keys.ts shapes). */
function channelOfKey(key: string): string {
  const p = parseSessionKey(key);
  if (p.kind === "dm" || p.kind === "group") return p.channel;
  return p.kind === "other" ? "unknown" : p.kind;
}
