/**
 * What the gateway's routes and methods share: the core context, the daemon parts and the helpers
 * other modules reuse for their own routes on the same port (the `/api` surface): `authorize` and
 * `readJson`. Published as `parts.extra.gateway`.
 */
import type { IncomingMessage } from "node:http";
import type { CoreContext } from "../runtime/context.js";
import type { AgentHost } from "../core/host.js";
import type { ConfigManager } from "../config/manager.js";
import type { ChannelRegistry } from "../channels/registry.js";
import type { DaemonParts } from "../daemon/services.js";
import type { HttpServer } from "./http-server.js";
import type { AgentSource } from "../agent/agents.js";
import type { SessionStore } from "../session/session-store.js";
import type { GatewayAuth } from "./auth.js";
import { clientAddress, bearerToken, readJsonObject, type HttpError } from "./http-util.js";
import { MethodError } from "./protocol.js";

export interface GatewayDeps {
  http: HttpServer;
  /** The agent host; falls back to `parts.host` at call time when not given. */
  host?: AgentHost | undefined;
  channels: ChannelRegistry;
  config: ConfigManager;
  parts: DaemonParts;
}

export class GatewayRuntime {
  constructor(
    readonly ctx: CoreContext,
    readonly deps: GatewayDeps,
    readonly auth: GatewayAuth,
    readonly sessions: SessionStore,
  ) {}

  /** The agent host or undefined while none is built. */
  maybeHost(): AgentHost | undefined {
    return this.deps.host ?? this.deps.parts.host;
  }

  /** The agent host; throws `unavailable` when none is running. */
  host(): AgentHost {
    const h = this.maybeHost();
    if (!h) throw new MethodError("unavailable", "the agent host is not running");
    return h;
  }

  /** Extra agent sources (workspace files, API agents) registered as `parts.extra.agentSources`. */
  agentSources(): AgentSource[] {
    const s = this.deps.parts.extra.agentSources;
    if (Array.isArray(s)) return s as AgentSource[];
    // The agent host section publishes its sources as parts.extra.agents {fileAgents, apiAgents}.
    const a = this.deps.parts.extra.agents as
      { fileAgents?: AgentSource; apiAgents?: AgentSource } | undefined;
    return [a?.fileAgents, a?.apiAgents].filter((x): x is AgentSource => !!x);
  }

  /**
   * Authorizes an HTTP request by its bearer token (and rate limit). Returns the error to send, or
   * undefined when allowed. For `/api` and other routes sharing the port.
   */
  authorize(req: IncomingMessage): HttpError | undefined {
    const r = this.auth.check(clientAddress(req), bearerToken(req));
    return r.ok ? undefined : r.error;
  }

  /** Reads a JSON object body capped at gateway.max_body_bytes (HttpError 400/413 otherwise). */
  readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    return readJsonObject(req, this.ctx.config().gateway.max_body_bytes);
  }

  /** An optional part other engineers register in `parts.extra`, when it has the given methods. */
  part<T>(name: string, methods: readonly string[]): T | undefined {
    const p = this.deps.parts.extra[name];
    if (!p || typeof p !== "object") return undefined;
    for (const m of methods) if (typeof (p as Record<string, unknown>)[m] !== "function") return undefined;
    return p as T;
  }
}
