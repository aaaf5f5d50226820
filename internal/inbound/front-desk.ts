/**
 * The front desk: from an accepted inbound chat message to a turn. Gate (who may approve) ->
 * command -> route to an agent -> session key -> submit -> relay the reply. Telegram and Discord
 * hand it every accepted message; the gateway's `chat.send` uses its routing (`chooseAgent`) and
 * commands. Access control (pairing, mentions) happens before this, in the channel, which also
 * renders the reply (the {@link ReplyRelay} port).
 */
import type { CoreContext } from "../runtime/context.js";
import type { AgentHost, ImageInput, InboundMessage, TurnResult } from "../core/host.js";
import { findAgent, type AgentSource } from "../agent/agents.js";
import { sessionKeys } from "../session/keys.js";
import type { Config } from "../config/schema.js";
import { AgentChoiceStore, resolveAgentId, type RouteSource } from "./agent-choice.js";
import { parseCommand, runCommand, type ApprovalResolver, type CommandContext } from "./commands.js";
import type { LastTargetSink, RelayOutcome, ReplyRelay } from "./reply-relay.js";
import type { MediaParts } from "../media/media-parts.js";
import { speakReply, voiceWanted } from "./voice-reply.js";

/** One accepted message from a chat. */
export interface InboundChat {
  /** Channel id, also the target prefix: `telegram`, `discord`. */
  channel: string;
  /** Platform chat/channel id (targets are `<channel>:<chatId>`). */
  chatId: string;
  /** Forum topic / thread, for a per-thread group session. */
  threadId?: string;
  /** Discord guild, for routing. */
  guildId?: string;
  isGroup: boolean;
  sender: { id: string; name?: string };
  text: string;
  images?: ImageInput[];
  /** Address the relay sends to (opaque; may include the thread). Default: chatId. */
  relayChatId?: string;
  /** Bot username, so `/cmd@otherbot` is left alone. */
  botUsername?: string;
  /** Human description of the origin for the prompt. */
  originLabel?: string;
}

export interface InboundDeps {
  ctx: CoreContext;
  host: AgentHost;
  relay: ReplyRelay;
  /** Where the owner's last target is remembered (the channel registry). */
  registry?: LastTargetSink;
  approvals?: ApprovalResolver;
  agentSources?: readonly AgentSource[];
  choices?: AgentChoiceStore;
  /**
   * Who may answer approval requests (`/approve`, `/deny`, buttons): in a group anyone can type the
   * command, but only the owner's allowed users may decide. Default: everyone who got this far.
   */
  mayApprove?: (senderId: string) => boolean;
  /** Transcription/speech and the per-chat `/voice` switch. */
  media?: MediaParts;
}

/** The reply to an approval command from someone who may not decide. */
export const NOT_AN_APPROVER = "Only the owner (an allowed user) can approve or deny actions.";

/** What happened to a message. */
export type InboundOutcome =
  | { kind: "command"; name: string; reply: string }
  | { kind: "turn"; result: TurnResult; relay: RelayOutcome };

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

/** Routes accepted chat messages to the host. One per channel. */
export class InboundRouter {
  readonly choices: AgentChoiceStore;

  constructor(private deps: InboundDeps) {
    this.choices = deps.choices ?? new AgentChoiceStore(deps.ctx.db, () => deps.ctx.clock.now());
  }

  /** Scope of the per-chat agent choice. */
  chatScope(m: InboundChat): string {
    return `${m.channel}:${m.chatId}${m.threadId !== undefined ? `:${m.threadId}` : ""}`;
  }

  /** The agent answering this chat (explicit `/agent` > routing > default). */
  agentFor(m: InboundChat): string {
    return chooseAgent(
      this.deps.ctx.config(),
      this.choices,
      { channel: m.channel, chatId: m.chatId, ...(m.guildId ? { guildId: m.guildId } : {}) },
      this.chatScope(m),
      this.deps.agentSources,
    );
  }

  /** Session key: per DM user, per group chat, per forum topic/thread. */
  sessionKey(m: InboundChat, agentId: string): string {
    return m.isGroup
      ? sessionKeys.group(agentId, m.channel, m.chatId, m.threadId)
      : sessionKeys.dm(agentId, m.channel, m.sender.id);
  }

  /**
   * Handles one message: a command is answered directly; anything else becomes a turn whose events
   * stream into the relay. Resolves after the reply was delivered.
   */
  async handle(m: InboundChat): Promise<InboundOutcome> {
    const { host, relay, registry } = this.deps;
    const agentId = this.agentFor(m);
    const sessionKey = this.sessionKey(m, agentId);
    // A forum topic's target keeps the topic, so approvals, resumed turns and async results that
    // go out later through the registry land in the topic the message came from.
    const replyTarget = `${m.channel}:${m.chatId}${m.threadId !== undefined ? `:${m.threadId}` : ""}`;
    const relayChat = m.relayChatId ?? m.chatId;
    if (!m.isGroup) registry?.setLastTarget(replyTarget);
    const cmd = m.images?.length ? undefined : parseCommand(m.text, m.botUsername);
    if (
      cmd &&
      (cmd.name === "approve" || cmd.name === "deny") &&
      this.deps.mayApprove?.(m.sender.id) === false
    ) {
      await relay.sendText(relayChat, NOT_AN_APPROVER, { markdown: false }).catch(() => undefined);
      return { kind: "command", name: cmd.name, reply: NOT_AN_APPROVER };
    }
    if (cmd) {
      const c: CommandContext = {
        channel: m.channel,
        sessionKey,
        agentId,
        chatScope: this.chatScope(m),
        chatId: m.chatId,
        sender: m.sender,
        // Approvals go to the reply target; only that chat (topic included) settles them.
        approver: { target: replyTarget },
      };
      const reply = await runCommand(cmd, c, {
        ctx: this.deps.ctx,
        host,
        choices: this.choices,
        ...(this.deps.approvals ? { approvals: this.deps.approvals } : {}),
        ...(this.deps.agentSources ? { agentSources: this.deps.agentSources } : {}),
        ...(this.deps.media ? { media: this.deps.media } : {}),
      });
      await relay.sendText(relayChat, reply, { markdown: false }).catch((err: unknown) => {
        relay.logger?.warn({ err: (err as Error).message }, "could not send a command reply");
      });
      return { kind: "command", name: cmd.name, reply };
    }
    // A spoken answer goes out whole at the end, so no text preview streams before it.
    const voice = voiceWanted(this.deps.media, relay, this.chatScope(m));
    const stream = relay.stream(relayChat, sessionKey, voice ? { mode: "off" } : undefined);
    stream.startTyping();
    const msg: InboundMessage = {
      channel: m.channel,
      sessionKey,
      agentId,
      text: m.text,
      ...(m.images?.length ? { images: m.images } : {}),
      sender: m.sender,
      replyTarget,
      ...(m.originLabel ? { originLabel: m.originLabel } : {}),
    };
    const deliveries = relay.deliveries;
    // Recorded with the user message (one commit) and cleared once delivered: a stored answer a
    // crash kept from the chat is sent after the restart (delivery-ledger.ts).
    if (deliveries) msg.onAccepted = (ids) => deliveries.opened(ids.requestId, relayChat, sessionKey);
    // In voice mode the final text is held back from the stream until speech was tried.
    const onEvent: typeof stream.onEvent = voice
      ? (e) => {
          if (e.type !== "turn_end") stream.onEvent(e);
        }
      : stream.onEvent;
    const handle = host.submit(msg, onEvent);
    const result = await handle.result;
    const media = this.deps.media;
    const spoken =
      voice && media !== undefined && result.finishReason !== "error"
        ? await speakReply(media, relay, relayChat, result.text, { sessionKey, agentId })
        : false;
    // A turn that failed before emitting turn_end (e.g. unknown agent) still gets its reply.
    if (result.error && result.finishReason === "error")
      stream.onEvent({
        type: "error",
        runId: result.runId,
        code: result.error.code,
        message: result.error.message,
      });
    stream.onEvent({
      type: "turn_end",
      runId: result.runId,
      text: spoken ? "" : result.text,
      finishReason: result.finishReason,
      usage: result.usage,
    });
    const out = await stream.done;
    try {
      deliveries?.closed(handle.requestId);
    } catch (err) {
      // A full disk: the row stays, and the answer may be sent again after a restart (never lost).
      relay.logger?.warn({ err: (err as Error).message }, "could not record a delivered answer");
    }
    return { kind: "turn", result, relay: out };
  }
}
