/**
 * The front desk: the one way a message from outside becomes a turn. Every door passes through it:
 * Telegram and Discord (through their {@link InboundRouter} in `chat-router.ts`), the gateway's
 * `chat.send`, the OpenAI-compatible API, the `/api` turn and one-shot routes, and webhooks.
 *
 * A door translates its request into a {@link FrontDeskEntry} and renders what comes back; the desk
 * does the rest, the same way for all of them: route to an agent (the agent the door names, else the
 * `/agent` choice of the chat > the most specific `routing` entry > `agents.default`), build the
 * session key, answer slash commands where the door has them (with the approval gate), and submit to
 * the host with the sender, origin label and durability hook (`onAccepted`) the door gave.
 *
 * Access control (tokens, pairing, secrets, mentions) stays in the door, before this.
 */
import type { CoreContext } from "../runtime/context.js";
import type { AgentEvent } from "../core/agent-events.js";
import type { AgentHost, ImageInput, InboundMessage, TurnHandle } from "../core/host.js";
import { findAgent, listAgents, type AgentDef, type AgentSource } from "../agent/agents.js";
import type { Config } from "../config/schema.js";
import type { MediaParts } from "../media/media-parts.js";
import { AgentChoiceStore, resolveAgentId, type RouteSource } from "./agent-choice.js";
import {
  parseCommand,
  runCommand,
  type ApprovalResolver,
  type CommandContext,
  type ParsedCommand,
} from "./commands.js";
import { sessionKeyFor, type SessionSpec } from "./session-spec.js";

export { SessionKeyError, type SessionSpec } from "./session-spec.js";

/** The reply to an approval command from someone who may not decide. */
export const NOT_AN_APPROVER =
  "Only the owner can approve or deny actions (channels.<name>.owner in config.yaml, else allow_from); a paired user or a group member cannot.";

/**
 * The agent for a message from `route`, for every way in: the `/agent` choice of `scope` > the most
 * specific `routing` entry > `agents.default`. Without agent sources a file agent would look
 * undefined, so nothing is skipped then.
 */
export function chooseAgent(
  cfg: Config,
  choices: AgentChoiceStore,
  route: RouteSource,
  scope: string,
  sources?: readonly AgentSource[],
): string {
  return resolveAgentId(
    cfg,
    route,
    choices.choice(scope),
    sources ? (id) => findAgent(cfg, id, sources) !== undefined : undefined,
  );
}

/** Where a message is going: the door, the agent it names (if any), the chat it comes from, the session. */
export interface Destination {
  /** The door's channel id: `telegram`, `discord`, `gateway`, `api`, `hook`. Also the routing channel. */
  channel: string;
  /**
   * The agent the door names (a gateway `agent` param, `familiar/<id>`, the `/api` path, a hook's
   * `agent`): used as is, so the door checks it exists first ({@link FrontDeskPort.findAgent}).
   */
  agentId?: string;
  /**
   * The chat the message comes from, for the `/agent` choice (`scope`) and `routing` (`chatId`,
   * `guildId`). Absent (and no `agentId`): `agents.default`.
   */
  from?: { chatId: string; guildId?: string; scope: string };
  session: SessionSpec;
}

/** The agent and session a {@link Destination} resolves to. */
export interface Routed {
  agentId: string;
  sessionKey: string;
}

/** One message at the front desk, as a door translated it. */
export interface FrontDeskEntry extends Destination {
  text: string;
  images?: ImageInput[];
  sender?: { id: string; name?: string };
  /** Human description of the origin for the prompt. */
  originLabel?: string;
  /** Where replies and announcements of the session go later (approvals, async results). */
  replyTarget?: string;
  /** Where this turn's approval requests go instead (a live gateway connection, the owner's DM). */
  approvalTarget?: string;
  /** Leave USER.md, MEMORY.md and memory search out of this turn (a group, a non-owner). */
  withholdPrivate?: boolean;
  /** Recorded in the transaction that stores the user message (idempotency keys, delivery ledgers). */
  onAccepted?: InboundMessage["onAccepted"];
  extraSystem?: string;
  /** A turn that stores nothing (stateless `/v1`, the one-shot `/api` chat). */
  ephemeral?: InboundMessage["ephemeral"];
  /** Run again on a user message already stored (an idempotent repeat of a failed turn). */
  resume?: InboundMessage["resume"];
  /** An API client's tools, response format and sampling (`/v1`). */
  client?: InboundMessage["client"];
  /** Messages stored before the user message (a forked response chain, client tool results). */
  stored?: InboundMessage["stored"];
  /** Untrusted input the message carries (a document, a non-owner sender, a webhook body). */
  taint?: InboundMessage["taint"];
}

/** Who asks for a command, beyond the routed chat: the door's approval rules. */
export interface CommandCaller {
  /** Scope of the `/agent` and `/voice` choices. */
  chatScope: string;
  chatId: string;
  sender: { id: string; name?: string };
  approver: CommandContext["approver"];
  /** False when this sender may not answer approvals (a stranger in a group). Default: may. */
  mayApprove?: boolean;
  /** The per-chat `/voice` switch, on doors that can speak. */
  media?: MediaParts;
}

/** The part of the front desk the gateway's doors use (they never see the daemon). */
export interface FrontDeskPort {
  /** An agent defined in config, the workspace or over the API; undefined otherwise. */
  findAgent(id: string): AgentDef | undefined;
  /** Every defined agent (config first). */
  agents(): AgentDef[];
  /** The agent and session key of a message, without submitting it. */
  route(d: Destination): Routed;
  /** Routes the entry and submits it to the host; `onEvent` receives the turn's events. */
  admit(entry: FrontDeskEntry, onEvent?: (e: AgentEvent) => void): TurnHandle;
  /** `/name args` when the text is one of the chat commands (and not for another bot). */
  parseCommand(text: string, botUsername?: string): ParsedCommand | undefined;
  /** Answers a command (never through the model). Never throws: failures become the reply. */
  command(cmd: ParsedCommand, at: Routed & { channel: string }, caller: CommandCaller): Promise<string>;
}

export interface FrontDeskDeps {
  ctx: CoreContext;
  host: AgentHost;
  approvals?: ApprovalResolver;
  /** File and API agents, so `/agent <id>`, routing and named agents reach them too. */
  agentSources?: readonly AgentSource[];
  choices?: AgentChoiceStore;
}

/** The daemon's one front desk (a channel built on its own gets its own, on the same store). */
export class FrontDesk implements FrontDeskPort {
  /** The per-chat `/agent` choices (kv table). */
  readonly choices: AgentChoiceStore;

  constructor(private deps: FrontDeskDeps) {
    this.choices = deps.choices ?? new AgentChoiceStore(deps.ctx.db, () => deps.ctx.clock.now());
  }

  findAgent(id: string): AgentDef | undefined {
    return findAgent(this.deps.ctx.config(), id, this.deps.agentSources ?? []);
  }

  agents(): AgentDef[] {
    return listAgents(this.deps.ctx.config(), this.deps.agentSources ?? []);
  }

  route(d: Destination): Routed {
    const cfg = this.deps.ctx.config();
    const agentId =
      d.agentId ??
      (d.from
        ? chooseAgent(
            cfg,
            this.choices,
            {
              channel: d.channel,
              chatId: d.from.chatId,
              ...(d.from.guildId ? { guildId: d.from.guildId } : {}),
            },
            d.from.scope,
            this.deps.agentSources,
          )
        : cfg.agents.default);
    return { agentId, sessionKey: sessionKeyFor(d.session, agentId, d.channel) };
  }

  admit(entry: FrontDeskEntry, onEvent?: (e: AgentEvent) => void): TurnHandle {
    const { agentId, sessionKey } = this.route(entry);
    const msg: InboundMessage = {
      channel: entry.channel,
      sessionKey,
      agentId,
      text: entry.text,
      ...(entry.images?.length ? { images: entry.images } : {}),
      ...(entry.sender ? { sender: entry.sender } : {}),
      ...(entry.replyTarget !== undefined ? { replyTarget: entry.replyTarget } : {}),
      ...(entry.approvalTarget !== undefined ? { approvalTarget: entry.approvalTarget } : {}),
      ...(entry.withholdPrivate ? { withholdPrivate: true } : {}),
      ...(entry.originLabel ? { originLabel: entry.originLabel } : {}),
      ...(entry.extraSystem !== undefined ? { extraSystem: entry.extraSystem } : {}),
      ...(entry.ephemeral ? { ephemeral: entry.ephemeral } : {}),
      ...(entry.onAccepted ? { onAccepted: entry.onAccepted } : {}),
      ...(entry.resume ? { resume: entry.resume } : {}),
      ...(entry.client ? { client: entry.client } : {}),
      ...(entry.stored ? { stored: entry.stored } : {}),
      ...(entry.taint?.length ? { taint: entry.taint } : {}),
    };
    return this.deps.host.submit(msg, onEvent);
  }

  parseCommand(text: string, botUsername?: string): ParsedCommand | undefined {
    return parseCommand(text, botUsername);
  }

  async command(
    cmd: ParsedCommand,
    at: Routed & { channel: string },
    caller: CommandCaller,
  ): Promise<string> {
    // In a group anyone can type `/approve`; only those the door lets decide may.
    if ((cmd.name === "approve" || cmd.name === "deny") && caller.mayApprove === false)
      return NOT_AN_APPROVER;
    const { approvals, agentSources } = this.deps;
    return runCommand(
      cmd,
      {
        channel: at.channel,
        sessionKey: at.sessionKey,
        agentId: at.agentId,
        chatScope: caller.chatScope,
        chatId: caller.chatId,
        sender: caller.sender,
        approver: caller.approver,
      },
      {
        ctx: this.deps.ctx,
        host: this.deps.host,
        choices: this.choices,
        ...(approvals ? { approvals } : {}),
        ...(agentSources ? { agentSources } : {}),
        ...(caller.media ? { media: caller.media } : {}),
      },
    );
  }
}
