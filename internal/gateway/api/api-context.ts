/**
 * What every `/api` route shares: the daemon parts it reads (agent host, front desk, model router),
 * agent and session lookup with the surface's error codes, the model-availability check, body
 * validation and JSON replies.
 *
 * Invariants:
 * - a session is only reachable under the agent it is pinned to: another agent's path answers
 *   400 `session_agent_mismatch` (never a silent cross-agent write);
 * - writing into a session of another channel (Telegram, Discord, cron...) needs
 *   `gateway.allow_channel_writes`; reading is always allowed.
 */
import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import type { Config } from "../../config/schema.js";
import type { Db } from "../../store/db.js";
import type { AgentHostImpl } from "../../agent/host.js";
import type { AgentDef } from "../../agent/agents.js";
import type { FrontDeskPort } from "../../inbound/front-desk.js";
import { parseSessionKey } from "../../session/keys.js";
import type { SessionRow } from "../../session/session-store.js";
import type { GatewayDeps, GatewayRuntime } from "../runtime.js";
import { agentNotFound, apiError, fromZod, sessionNotFound } from "./api-errors.js";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

export class ApiContext {
  constructor(readonly rt: GatewayRuntime) {}

  config(): Config {
    return this.rt.ctx.config();
  }

  get db(): Db {
    return this.rt.ctx.db;
  }

  /** The agent host parts (host, file and API agent stores); 503 while none is built. */
  agentParts(): NonNullable<GatewayDeps["agents"]> {
    const a = this.rt.deps.agents;
    if (!a?.host) throw apiError(503, "unavailable", "the agent host is not running");
    return a;
  }

  host(): AgentHostImpl {
    return this.agentParts().host;
  }

  /** The front desk the turn routes submit through; 503 while none is built. */
  desk(): FrontDeskPort {
    const d = this.rt.maybeFrontDesk();
    if (!d) throw apiError(503, "unavailable", "the agent host is not running");
    return d;
  }

  agents(): AgentDef[] {
    return this.rt.listAgents();
  }

  /** The agent or 404 `agent_not_found`. */
  agent(id: string): AgentDef {
    const a = this.rt.findAgent(id);
    if (!a) throw agentNotFound(id);
    return a;
  }

  router(): GatewayDeps["router"] {
    return this.rt.deps.router;
  }

  /**
   * Refuses a turn that cannot reach a model, before anything is stored:
   * 422 `llm_provider_unsupported` when the agent's model names a provider that is not configured,
   * 422 `llm_credential_missing` when that provider is remote and has no api_key,
   * 503 `chat_disabled` when no provider is configured at all (only the offline echo model is left).
   * Agents on a CLI engine need no model and always pass.
   */
  checkModel(agent: AgentDef): void {
    if (agent.engine !== "model") return;
    const cfg = this.config();
    const router = this.router();
    let ref = agent.model;
    if (!ref) {
      if (Object.keys(cfg.models.providers).length === 0 || router?.usingEcho())
        throw apiError(
          503,
          "chat_disabled",
          "chat is disabled: no model provider is configured (add one under models.providers)",
        );
      try {
        ref = router?.chain()[0] ?? cfg.models.primary;
      } catch {
        ref = cfg.models.primary;
      }
    }
    if (!ref) return;
    const provider = ref.slice(0, Math.max(0, ref.indexOf("/")));
    if (provider === "echo") return; // the offline echo model, chosen on purpose
    const pc = cfg.models.providers[provider];
    if (!pc)
      throw apiError(
        422,
        "llm_provider_unsupported",
        `agent "${agent.id}" uses model ${ref}, whose provider "${provider}" is not configured under models.providers`,
      );
    if (!pc.api_key && !LOOPBACK_HOSTS.has(hostOf(pc.base_url)))
      throw apiError(
        422,
        "llm_credential_missing",
        `agent "${agent.id}" uses model ${ref}, but provider "${provider}" has no api_key (models.providers.${provider}.api_key)`,
      );
  }

  /**
   * The session `sid` as reached through `/api/agents/{agentId}/...`: 404 when the agent or the
   * session is unknown, 400 `session_agent_mismatch` when the session belongs to another agent.
   */
  session(agentId: string, sid: string): SessionRow {
    this.agent(agentId);
    const s = this.host().sessions.get(sid);
    if (!s) throw sessionNotFound(sid);
    if (s.agent_id !== agentId)
      throw apiError(
        400,
        "session_agent_mismatch",
        `session ${sid} belongs to agent "${s.agent_id}", not "${agentId}"`,
      );
    return s;
  }

  /** Whether `/api` may write into a session (own gateway sessions always; others by config). */
  writable(s: SessionRow): boolean {
    return parseSessionKey(s.key).kind === "gateway" || this.config().gateway.allow_channel_writes;
  }

  /** 403 `session_read_only` unless the session is writable. */
  requireWritable(s: SessionRow): void {
    if (!this.writable(s))
      throw apiError(
        403,
        "session_read_only",
        `session ${s.id} belongs to another channel (${s.key}); set gateway.allow_channel_writes to write to it`,
      );
  }

  /** Reads and validates a JSON body (an empty body counts as `{}`). */
  async body<S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<z.infer<S>> {
    const declared = req.headers["content-length"];
    const raw =
      declared === "0" || (declared === undefined && !req.headers["transfer-encoding"])
        ? {}
        : await this.rt.readJson(req);
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw fromZod(parsed.error);
    return parsed.data;
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}

/** Writes a JSON response (the gateway's one helper, re-exported for the API routes). */
export { sendJson } from "../http-util.js";
