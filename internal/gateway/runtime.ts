/**
 * What the gateway's routes and methods share: the core context, the narrow parts of the daemon they
 * use (handed in by the wiring root, never the daemon itself) and the helpers other routes on the
 * same port reuse: `authorize` and `readJson`. Optional parts absent here make their methods answer
 * `unavailable`, never guess.
 */
import type { IncomingMessage } from "node:http";
import type { CoreContext } from "../runtime/context.js";
import type { Outbox } from "../core/outbox.js";
import type { ConfigManager } from "../config/manager.js";
import type { ChannelProbe, ChannelStatus } from "../channels/channel.js";
import type { FileDelivery } from "../tools/send-file.js";
import type { ApprovalResolver } from "../inbound/commands.js";
import type { FrontDeskPort } from "../inbound/front-desk.js";
import type { ApprovalManager } from "../tools/approvals.js";
import type { Containment } from "../tools/taint/containment.js";
import type { HttpServer } from "./http-server.js";
import { findAgent, listAgents, type AgentDef } from "../agent/agents.js";
import type { AgentHostParts } from "../agent/host-service.js";
import type { AgentHostImpl } from "../agent/host.js";
import type { ModelRouter } from "../models/router.js";
import type { SessionStore } from "../session/session-store.js";
import type { GatewayAuth } from "./auth.js";
import { clientAddress, bearerToken, readJsonObject, type HttpError } from "./http-util.js";
import { TurnIdempotency } from "./turn-idempotency.js";
import { MethodError } from "./protocol.js";
import { SessionWatchers } from "./session-watchers.js";

/** The scheduler as the `cron.*` methods and `status` use it. */
export interface GatewayCron {
  list(): unknown;
  run(id: string): unknown;
  add(input: unknown): unknown;
  remove(id: string): void;
  runs(jobId: string, limit?: number): unknown;
  /** Pauses or resumes a runtime job (`cron.pause` / `cron.resume`). */
  setEnabled(id: string, enabled: boolean): unknown;
}

/** Token usage as `usage.get` reads it. */
export interface GatewayUsage {
  aggregate(since?: number): unknown;
  byModel(since?: number): unknown;
}

export interface GatewayDeps {
  http: HttpServer;
  /** Config file, last error and reload for `config.get` / `config.reload`. */
  config: Pick<ConfigManager, "file" | "error" | "reload" | "pendingRestart">;
  /** Delivery for webhooks and channel states for `status`. */
  channels: Outbox &
    FileDelivery & {
      statuses(): Record<string, ChannelStatus>;
      /** The running channels, for `channels.probe` (`familiar doctor --live`). */
      list?(): {
        id: string;
        status(): ChannelStatus;
        probe?(): Promise<ChannelProbe>;
        welcomePaired?(): Promise<number>;
      }[];
    };
  /** The agent host and the API agent store (`/api/agents` writes it). */
  agents?: Pick<AgentHostParts, "apiAgents"> & { host: AgentHostImpl };
  /** The front desk every turn goes through (routing, session keys, commands, submit). */
  frontDesk?: FrontDeskPort;
  router?: Pick<ModelRouter, "status" | "usingEcho" | "chain">;
  usage?: GatewayUsage;
  cron?: GatewayCron;
  heartbeat?: { status(): unknown; recentRuns(limit?: number): unknown[] };
  /** The memory index for `memory.status` / `memory.reindex`. */
  memory?: { status(): unknown; reindex(): unknown };
  /** The data dir's disk space (`status`): `degraded` while nearly full. */
  disk?: { health(): unknown };
  /** Pending approvals: `/approve` in chat, `approvals.*` methods. */
  approvals?: Omit<ApprovalResolver, "show"> &
    Pick<ApprovalManager, "list" | "resolve" | "access" | "show" | "onClosed">;
  /** Prompt-injection containment: session taint, grants, tainted memory. */
  containment?: Containment;
}

export class GatewayRuntime {
  private idem: TurnIdempotency | undefined;
  /** Which live connection shows which chat session (where a reminder asked there is pushed). */
  readonly watchers = new SessionWatchers();

  /** Idempotency of the turn-starting POSTs of `/v1` and `/api` (made on first use). */
  get turnIdempotency(): TurnIdempotency {
    this.idem ??= new TurnIdempotency(this.ctx.db, () => this.ctx.clock.now());
    return this.idem;
  }

  constructor(
    readonly ctx: CoreContext,
    readonly deps: GatewayDeps,
    readonly auth: GatewayAuth,
    readonly sessions: SessionStore,
  ) {}

  /** The agent host or undefined while none is built. */
  maybeHost(): AgentHostImpl | undefined {
    return this.deps.agents?.host;
  }

  /** The agent host; throws `unavailable` when none is running. */
  host(): AgentHostImpl {
    const h = this.maybeHost();
    if (!h) throw new MethodError("unavailable", "the agent host is not running");
    return h;
  }

  /** The front desk or undefined while none is built. */
  maybeFrontDesk(): FrontDeskPort | undefined {
    return this.deps.frontDesk;
  }

  /** The front desk every door submits turns through; throws `unavailable` when none is running. */
  frontDesk(): FrontDeskPort {
    const d = this.maybeFrontDesk();
    if (!d) throw new MethodError("unavailable", "the agent host is not running");
    return d;
  }

  /**
   * An agent a request names, as the front desk finds it (config, workspace files, API agents);
   * config agents only while no front desk is built.
   */
  findAgent(id: string): AgentDef | undefined {
    const desk = this.maybeFrontDesk();
    return desk ? desk.findAgent(id) : findAgent(this.ctx.config(), id);
  }

  /** Every defined agent, config first (as {@link findAgent} sees them). */
  listAgents(): AgentDef[] {
    const desk = this.maybeFrontDesk();
    return desk ? desk.agents() : listAgents(this.ctx.config());
  }

  /**
   * Authorizes an HTTP request by its bearer token (a slowed source waits for its turn first). Returns the error to send, or
   * undefined when allowed. For `/api` and other routes sharing the port.
   */
  async authorize(req: IncomingMessage): Promise<HttpError | undefined> {
    const r = await this.auth.check(clientAddress(req), bearerToken(req));
    return r.ok ? undefined : r.error;
  }

  /** Reads a JSON object body capped at gateway.max_body_bytes (HttpError 400/413 otherwise). */
  readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    return readJsonObject(req, this.ctx.config().gateway.max_body_bytes);
  }
}
