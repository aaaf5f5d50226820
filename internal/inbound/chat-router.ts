/**
 * The chat door of the front desk (Telegram, Discord): an accepted chat message goes through the
 * {@link FrontDesk} (command, route to an agent, session key, submit) and its reply is rendered by the
 * channel's {@link ReplyRelay} (streamed preview, final answer, voice note). Access control (pairing,
 * mentions) happens before this, in the channel.
 */
import type { CoreContext } from "../runtime/context.js";
import type { AgentHost, ImageInput, TurnResult } from "../core/host.js";
import type { TaintInput } from "../core/taint.js";
import type { AgentChoiceStore } from "./agent-choice.js";
import type { AgentSource } from "../agent/agents.js";
import type { ApprovalResolver } from "./commands.js";
import type { LastTargetSink, RelayOutcome, ReplyRelay } from "./reply-relay.js";
import type { MediaParts } from "../media/media-parts.js";
import { FrontDesk, type FrontDeskEntry } from "./front-desk.js";
import { speakReply, voiceWanted } from "./voice-reply.js";
import { backlogFollowUp, backlogNotice, ChatBacklog } from "./chat-backlog.js";

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
  /** Untrusted input the channel found in the message (a document's text, a transcript). */
  taint?: TaintInput[];
}

export interface InboundDeps {
  ctx: CoreContext;
  /** The daemon's front desk; built from `host`, `approvals`, `agentSources`, `choices` when absent. */
  desk?: FrontDesk;
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
  /**
   * Whether a sender is the owner (containment): a message from anyone else taints the session.
   * Default: {@link mayApprove}, else everyone who got this far.
   */
  isOwner?: (senderId: string) => boolean;
  /**
   * The owner's private chat (`telegram:<id>`): a question raised in a group or by a non-owner goes
   * there, never into the chat where the stranger reads it. Undefined: no owner is configured.
   */
  ownerTarget?: () => string | undefined;
  /** True when the owner opted this chat in to their private files (`private_context`). */
  privateAllowed?: (chatId: string) => boolean;
  /** Transcription/speech and the per-chat `/voice` switch. */
  media?: MediaParts;
}

/** What happened to a message. */
export type InboundOutcome =
  | { kind: "command"; name: string; reply: string }
  | { kind: "turn"; result: TurnResult; relay: RelayOutcome }
  /** Not taken: the chat's backlog was full (`reliability.max_backlog_per_chat`); the sender is told. */
  | { kind: "refused"; waiting: number };

/** Hands a chat's accepted messages to the front desk and renders the replies. One per channel. */
export class InboundRouter {
  readonly desk: FrontDesk;
  /** Each chat's admitted, unanswered messages, bounded (chat-backlog.ts). */
  readonly backlog: ChatBacklog;

  constructor(private deps: InboundDeps) {
    this.backlog = new ChatBacklog(() => deps.ctx.config().reliability.max_backlog_per_chat);
    this.desk =
      deps.desk ??
      new FrontDesk({
        ctx: deps.ctx,
        host: deps.host,
        ...(deps.approvals ? { approvals: deps.approvals } : {}),
        ...(deps.agentSources ? { agentSources: deps.agentSources } : {}),
        ...(deps.choices ? { choices: deps.choices } : {}),
      });
  }

  /** The per-chat `/agent` choices. */
  get choices(): AgentChoiceStore {
    return this.desk.choices;
  }

  /** Scope of the per-chat agent choice. */
  chatScope(m: InboundChat): string {
    return `${m.channel}:${m.chatId}${m.threadId !== undefined ? `:${m.threadId}` : ""}`;
  }

  /** The chat as the front desk routes it: per DM user, per group chat, per forum topic/thread. */
  destination(m: InboundChat): Pick<FrontDeskEntry, "channel" | "from" | "session"> {
    return {
      channel: m.channel,
      from: { chatId: m.chatId, ...(m.guildId ? { guildId: m.guildId } : {}), scope: this.chatScope(m) },
      session: m.isGroup
        ? { group: m.chatId, ...(m.threadId !== undefined ? { threadId: m.threadId } : {}) }
        : { dm: m.sender.id },
    };
  }

  /** What in this message the owner did not write: another sender, images, documents, transcripts. */
  taintOf(m: InboundChat): TaintInput[] {
    const out: TaintInput[] = [...(m.taint ?? [])];
    const isOwner = this.deps.isOwner ?? this.deps.mayApprove;
    if (isOwner && !isOwner(m.sender.id))
      out.push({
        kind: "non_owner_sender",
        detail: `${m.sender.name ? `${m.sender.name} ` : ""}(${m.channel} user ${m.sender.id})`,
      });
    if (m.images?.length)
      out.push({ kind: "image", detail: `${m.images.length} image(s) in ${m.channel}:${m.chatId}` });
    return out;
  }

  /** The agent answering this chat (explicit `/agent` > routing > default). */
  agentFor(m: InboundChat): string {
    return this.desk.route(this.destination(m)).agentId;
  }

  /** Session key: per DM user, per group chat, per forum topic/thread. */
  sessionKey(m: InboundChat, agentId: string): string {
    return this.desk.route({ ...this.destination(m), agentId }).sessionKey;
  }

  /**
   * Handles one message: a command is answered directly; anything else becomes a turn whose events
   * stream into the relay. Resolves after the reply was delivered.
   */
  async handle(m: InboundChat): Promise<InboundOutcome> {
    const { relay, registry } = this.deps;
    const where = this.destination(m);
    const { agentId, sessionKey } = this.desk.route(where);
    // A forum topic's target keeps the topic, so approvals, resumed turns and async results that
    // go out later through the registry land in the topic the message came from.
    const replyTarget = `${m.channel}:${m.chatId}${m.threadId !== undefined ? `:${m.threadId}` : ""}`;
    const relayChat = m.relayChatId ?? m.chatId;
    if (!m.isGroup) registry?.setLastTarget(replyTarget);
    const cmd = m.images?.length ? undefined : this.desk.parseCommand(m.text, m.botUsername);
    if (cmd) {
      const reply = await this.desk.command(
        cmd,
        { channel: m.channel, agentId, sessionKey },
        {
          chatScope: this.chatScope(m),
          chatId: m.chatId,
          sender: m.sender,
          // Approvals go to the reply target; only that chat (topic included) settles them.
          approver: { target: replyTarget },
          ...(this.deps.mayApprove ? { mayApprove: this.deps.mayApprove(m.sender.id) } : {}),
          ...(this.deps.media ? { media: this.deps.media } : {}),
        },
      );
      await relay.sendText(relayChat, reply, { markdown: false }).catch((err: unknown) => {
        relay.logger?.warn({ err: (err as Error).message }, "could not send a command reply");
      });
      return { kind: "command", name: cmd.name, reply };
    }
    // Commands above are never refused (a flooding sender can still /stop); a message beyond the
    // chat's backlog is refused before anything is stored, and the sender is told (chat-backlog.ts).
    const scope = this.chatScope(m);
    const entry = this.backlog.enter(scope);
    if (!entry.ok) {
      if (entry.tell) await this.tell(relayChat, backlogNotice(entry.waiting));
      return { kind: "refused", waiting: entry.waiting };
    }
    try {
      return await this.turn(m, { agentId, sessionKey, replyTarget, relayChat });
    } finally {
      const missed = entry.slot.leave();
      if (missed > 0) await this.tell(relayChat, backlogFollowUp(missed));
    }
  }

  /** Sends a line of the daemon's own to the chat; a failure is logged (the turn is not affected). */
  private async tell(relayChat: string, text: string): Promise<void> {
    const relay = this.deps.relay;
    await relay.sendText(relayChat, text, { markdown: false }).catch((err: unknown) => {
      relay.logger?.warn({ err: (err as Error).message }, "could not tell the chat about its backlog");
    });
  }

  /** Runs an admitted message as a turn and delivers its reply through the relay. */
  private async turn(
    m: InboundChat,
    at: { agentId: string; sessionKey: string; replyTarget: string; relayChat: string },
  ): Promise<InboundOutcome> {
    const { relay } = this.deps;
    const { agentId, sessionKey, replyTarget, relayChat } = at;
    // A spoken answer goes out whole at the end, so no text preview streams before it.
    const voice = voiceWanted(this.deps.media, relay, this.chatScope(m));
    const stream = relay.stream(relayChat, sessionKey, voice ? { mode: "off" } : undefined);
    stream.startTyping();
    const deliveries = relay.deliveries;
    // In voice mode the final text is held back from the stream until speech was tried.
    const onEvent: typeof stream.onEvent = voice
      ? (e) => {
          if (e.type !== "turn_end") stream.onEvent(e);
        }
      : stream.onEvent;
    const taint = this.taintOf(m);
    const isOwner = this.deps.isOwner ?? this.deps.mayApprove;
    const byOwner = isOwner ? isOwner(m.sender.id) : true;
    // A group or a non-owner's chat: the question goes to the owner's private chat, and the owner's
    // private files stay out of the prompt unless the owner opted this chat in.
    const shared = m.isGroup || !byOwner;
    const ownerChat = shared ? this.deps.ownerTarget?.() : undefined;
    const withholdPrivate = shared && !(this.deps.privateAllowed?.(m.chatId) ?? false);
    const handle = this.desk.admit(
      {
        channel: m.channel,
        agentId,
        session: { key: sessionKey },
        text: m.text,
        ...(taint.length ? { taint } : {}),
        ...(m.images?.length ? { images: m.images } : {}),
        sender: m.sender,
        replyTarget,
        ...(ownerChat !== undefined && ownerChat !== replyTarget ? { approvalTarget: ownerChat } : {}),
        ...(withholdPrivate ? { withholdPrivate: true } : {}),
        ...(m.originLabel ? { originLabel: m.originLabel } : {}),
        // Recorded with the user message (one commit) and cleared once delivered: a stored answer a
        // crash kept from the chat is sent after the restart (delivery-ledger.ts).
        ...(deliveries
          ? { onAccepted: (ids) => deliveries.opened(ids.requestId, relayChat, sessionKey) }
          : {}),
      },
      onEvent,
    );
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
