/**
 * Streaming replies shared by Telegram and Discord: turns AgentEvents into one message that is
 * edited as text arrives, then the complete final text delivered exactly once.
 *
 * Invariants:
 * - at most one preview message per turn, created on the first text (or tool line);
 * - edits of one chat are at most one per `editIntervalMs` (pacing shared by every turn of the chat);
 * - platform calls of one turn run one at a time, so the final delivery never races a preview edit;
 * - on `turn_end` the final text goes out once: as the last edit of the preview (plus follow-up
 *   chunks), or, when that edit fails, as new message(s) after which the preview is deleted. A failed
 *   edit is never retried with the final text after new messages went out, so there are never two
 *   copies of the answer;
 * - errors the user must know about are short plain replies. A burst of failing turns in one chat
 *   gets one reply per error code per {@link ERROR_REPLY_INTERVAL_MS}, but a message written after
 *   the user saw that reply gets its own (never silence for a new attempt).
 */
import type { AgentEvent } from "../../agent/events.js";
import type { OutboundFile, OutboundFileKind } from "../channel.js";
import { sleep, type Clock, type TimerHandle } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import { chunkMarkdown, type ChunkLimits } from "./chunking.js";
import type { DeliveryLedger } from "./delivery-ledger.js";
import type { PreviewLedger } from "./preview-ledger.js";

/** Options of one outbound message. */
export interface OutboundOptions {
  /** Render markdown (the adapter falls back to plain text when the platform rejects it). */
  markdown: boolean;
  /** Attach approve/deny buttons for this approval id. */
  approvalId?: string;
  silent?: boolean;
}

/**
 * What the relay needs from a platform. `chatId` is opaque to the relay (the adapter may encode a
 * thread in it). Methods reject when the platform finally refused or could not be reached (after
 * the adapter's own retries, e.g. on 429).
 */
export interface ChatAdapter {
  readonly limits: ChunkLimits;
  send(chatId: string, text: string, opts: OutboundOptions): Promise<string>;
  edit(chatId: string, messageId: string, text: string, opts: OutboundOptions): Promise<void>;
  delete(chatId: string, messageId: string): Promise<void>;
  typing(chatId: string): Promise<void>;
  /** Uploads a file (document, photo, audio, voice note) with its caption; returns the message id. */
  sendFile?(chatId: string, file: OutboundFile): Promise<string>;
  /** The platform's upload limit for a kind of file, in bytes. */
  maxFileBytes?(kind: OutboundFileKind): number;
}

export interface RelayOptions {
  mode: "edit" | "off";
  editIntervalMs: number;
  showTools: boolean;
}

export const TYPING_INTERVAL_MS = 4000;
export const ERROR_REPLY_INTERVAL_MS = 60_000;

/** How a turn's reply went out. */
export interface RelayOutcome {
  /** Messages that carry the final answer, in order. */
  finalMessageIds: string[];
  previewEdits: number;
  /** The final edit failed and the answer went out as new messages. */
  fellBack: boolean;
  error?: string;
}

/**
 * One per channel: owns per-chat pacing and error rate limits, and creates a {@link ReplyStream}
 * per turn.
 */
export class StreamRelay {
  private nextEditAt = new Map<string, number>();
  private lastError = new Map<string, number>();

  constructor(
    readonly adapter: ChatAdapter,
    private clock: Clock,
    private options: () => RelayOptions,
    readonly logger?: Logger,
    /** Records open previews so one left by a crash is removed after the restart. */
    readonly ledger?: PreviewLedger,
    /** Records undelivered answers so one a crash kept from its chat is sent after the restart. */
    readonly deliveries?: DeliveryLedger,
  ) {}

  /** Starts relaying one turn to `chatId` (for session `sessionKey`). Feed it the turn's events. */
  stream(chatId: string, sessionKey?: string, override?: Partial<RelayOptions>): ReplyStream {
    return new ReplyStream(this, chatId, { ...this.options(), ...override }, this.clock, sessionKey);
  }

  /**
   * Sends the answers an earlier run stored but did not deliver (kill -9 mid-delivery), then deletes
   * the preview messages it left behind mid-stream, so neither a lost answer nor a truncated copy
   * remains. Call once the platform is reachable. Returns how many previews were deleted.
   */
  async cleanupLeftovers(): Promise<number> {
    // Chat -> accepted-at of the earliest re-sent answer: a preview there since then was its draft.
    const resent = new Map<string, number>();
    for (const p of this.deliveries?.pending() ?? []) {
      try {
        await this.sendText(p.chat, p.text, { markdown: true });
        resent.set(p.chat, Math.min(resent.get(p.chat) ?? Infinity, p.acceptedAt));
        this.logger?.info(
          { chatId: p.chat, requestId: p.requestId },
          "sent an answer the previous run did not deliver",
        );
      } catch (err) {
        this.logger?.warn(
          { err: (err as Error).message, chatId: p.chat },
          "could not send an answer the previous run did not deliver",
        );
      }
      this.deliveries?.closed(p.requestId);
    }
    const ledger = this.ledger;
    if (!ledger) return 0;
    let deleted = 0;
    for (const l of ledger.leftovers()) {
      if (l.stale || l.createdAt >= (resent.get(l.chat) ?? Infinity)) {
        try {
          await this.adapter.delete(l.chat, l.messageId);
          deleted++;
        } catch (err) {
          this.logger?.warn(
            { err: (err as Error).message, chatId: l.chat },
            "could not delete a preview left by the previous run",
          );
        }
      }
      ledger.closed(l.chat, l.messageId);
    }
    if (deleted > 0)
      this.logger?.info({ channel: ledger.channel, deleted }, "removed previews left by the previous run");
    return deleted;
  }

  /** Sends text (chunked) as new messages; buttons go on the last chunk. Returns the message ids. */
  async sendText(chatId: string, text: string, opts: OutboundOptions): Promise<string[]> {
    const chunks = chunkMarkdown(text, this.adapter.limits);
    const ids: string[] = [];
    for (let i = 0; i < chunks.length; i++) {
      const last = i === chunks.length - 1;
      const o: OutboundOptions = { markdown: opts.markdown, ...(opts.silent ? { silent: true } : {}) };
      if (last && opts.approvalId) o.approvalId = opts.approvalId;
      ids.push(await this.adapter.send(chatId, chunks[i] ?? "", o));
    }
    return ids;
  }

  /**
   * Sends a short plain error reply unless one with the same code went to this chat recently.
   * With `since` (when the failed message arrived), a recent reply suppresses this one only when it
   * went out at or after `since`: the user already saw it after writing. Returns true when sent.
   */
  async errorReply(chatId: string, code: string, text: string, since?: number): Promise<boolean> {
    const key = `${chatId}\u0000${code}`;
    const now = this.clock.now();
    const last = this.lastError.get(key);
    if (last !== undefined && now - last < ERROR_REPLY_INTERVAL_MS && (since === undefined || last >= since))
      return false;
    this.lastError.set(key, now);
    try {
      await this.sendText(chatId, text, { markdown: false });
      return true;
    } catch (err) {
      this.logger?.warn({ err: (err as Error).message, chatId }, "could not send an error reply");
      return false;
    }
  }

  /** Milliseconds until the chat may be edited again. */
  editWait(chatId: string): number {
    return Math.max(0, (this.nextEditAt.get(chatId) ?? 0) - this.clock.now());
  }
  markEdited(chatId: string, intervalMs: number): void {
    this.nextEditAt.set(chatId, this.clock.now() + intervalMs);
    // Bounded memory: forget chats whose window passed long ago.
    if (this.nextEditAt.size > 10_000) {
      const now = this.clock.now();
      for (const [k, v] of this.nextEditAt) if (v < now) this.nextEditAt.delete(k);
    }
  }
}

/** The reply of one turn. Call `onEvent` for each AgentEvent; `done` settles after delivery. */
export class ReplyStream {
  private buffer = "";
  private toolLine: string | undefined;
  private previewId: string | undefined;
  private previewBroken = false;
  private shown = "";
  private timer: TimerHandle | undefined;
  private typingTimer: TimerHandle | undefined;
  private chain: Promise<void> = Promise.resolve();
  private finished = false;
  private errorEvent: { code: string; message: string } | undefined;
  private edits = 0;
  private resolveDone!: (o: RelayOutcome) => void;
  /** When the message this stream answers arrived (for the error reply limit). */
  private readonly createdAt: number;
  /** Settles once the final answer was delivered (or delivery finally failed). Never rejects. */
  readonly done: Promise<RelayOutcome>;

  constructor(
    private relay: StreamRelay,
    readonly chatId: string,
    private opts: RelayOptions,
    private clock: Clock,
    private sessionKey?: string,
  ) {
    this.done = new Promise((r) => (this.resolveDone = r));
    this.createdAt = clock.now();
  }

  onEvent = (e: AgentEvent): void => {
    if (this.finished) return;
    switch (e.type) {
      case "turn_start":
        this.startTyping();
        break;
      case "text_delta":
        this.buffer += e.delta;
        this.schedule();
        break;
      case "iteration_text":
        // Text restarts after a tool iteration; the preview keeps showing the old text until then.
        this.buffer = "";
        break;
      case "tool_start":
        if (this.opts.showTools) {
          this.toolLine = `🔧 ${e.name}…`;
          this.schedule();
        }
        break;
      case "tool_end":
        if (this.opts.showTools) this.toolLine = undefined;
        break;
      case "error":
        this.errorEvent = { code: e.code, message: e.message };
        break;
      case "notice":
        // The user must see that older messages were summarised (and how much it saved); other
        // notices are either part of the final text (loop breaker) or for UIs only.
        if (e.kind === "compaction") this.enqueue(() => this.sendNotice(e.text));
        break;
      case "turn_end":
        void this.finish(e);
        break;
      default:
        break;
    }
  };

  /** Starts the typing indicator now (before the turn starts, e.g. while queued). */
  startTyping(): void {
    if (this.typingTimer || this.finished) return;
    const tick = (): void => {
      if (this.finished) return;
      void this.relay.adapter.typing(this.chatId).catch(() => undefined);
      this.typingTimer = this.clock.setTimeout(tick, TYPING_INTERVAL_MS);
      this.typingTimer.unref?.();
    };
    tick();
  }

  private previewText(): string {
    let text = this.buffer.trim();
    if (this.toolLine) text = text ? `${text}\n\n${this.toolLine}` : this.toolLine;
    const limits = this.relay.adapter.limits;
    if (
      text.length > limits.maxLength - 4 ||
      (limits.maxLines && text.split("\n").length > limits.maxLines)
    ) {
      const first = chunkMarkdown(text, {
        maxLength: limits.maxLength - 4,
        ...(limits.maxLines ? { maxLines: limits.maxLines - 1 } : {}),
      })[0];
      text = `${first ?? ""}\n…`;
    }
    return text;
  }

  private schedule(): void {
    if (this.opts.mode === "off" || this.previewBroken || this.timer || this.finished) return;
    const wait = this.previewId === undefined && this.edits === 0 ? 0 : this.relay.editWait(this.chatId);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.enqueue(() => this.flushPreview());
    }, wait);
    this.timer.unref?.();
  }

  private enqueue(op: () => Promise<void>): void {
    this.chain = this.chain.then(op, op);
  }

  private async flushPreview(): Promise<void> {
    if (this.finished || this.previewBroken) return;
    const text = this.previewText();
    if (!text || text === this.shown) return;
    const { adapter } = this.relay;
    try {
      if (this.previewId === undefined) {
        this.previewId = await adapter.send(this.chatId, text, { markdown: true, silent: false });
        this.ledger("opened");
      } else {
        await adapter.edit(this.chatId, this.previewId, text, { markdown: true });
        this.edits++;
      }
      this.shown = text;
    } catch (err) {
      // Stop editing this preview; the final text will go out as a new message.
      if (this.previewId !== undefined) this.previewBroken = true;
      this.relay.logger?.warn({ err: (err as Error).message, chatId: this.chatId }, "preview update failed");
    } finally {
      this.relay.markEdited(this.chatId, this.opts.editIntervalMs);
    }
    // More text may have arrived while the call was in flight.
    if (!this.finished && this.previewText() !== this.shown) this.schedule();
  }

  /** A one-line notice as its own quiet message; a failure is logged and the turn goes on. */
  private async sendNotice(text: string): Promise<void> {
    try {
      await this.relay.adapter.send(this.chatId, text, { markdown: false, silent: true });
    } catch (err) {
      this.relay.logger?.warn(
        { err: (err as Error).message, chatId: this.chatId },
        "could not send a notice",
      );
    }
  }

  /** Keeps the preview ledger in step; a ledger failure (disk full) never breaks the reply. */
  private ledger(op: "opened" | "finalizing" | "closed"): void {
    const ledger = this.relay.ledger;
    const id = this.previewId;
    if (!ledger || id === undefined) return;
    try {
      if (op === "opened") ledger.opened(this.chatId, id, this.sessionKey, this.clock.now());
      else if (op === "finalizing") ledger.finalizing(this.chatId, id);
      else ledger.closed(this.chatId, id);
    } catch (err) {
      this.relay.logger?.warn({ err: (err as Error).message }, "could not record the preview");
    }
  }

  private async finish(e: Extract<AgentEvent, { type: "turn_end" }>): Promise<void> {
    this.finished = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    if (this.typingTimer) this.clock.clearTimeout(this.typingTimer);
    this.timer = undefined;
    this.ledger("finalizing");
    await this.chain.catch(() => undefined);
    // A preview whose creation was in flight at turn_end is recorded only now.
    this.ledger("finalizing");
    const outcome: RelayOutcome = { finalMessageIds: [], previewEdits: this.edits, fellBack: false };
    // A turn that failed before answering carries its error message as its text: say it once (below).
    const errorOnly =
      e.finishReason === "error" &&
      this.errorEvent !== undefined &&
      e.text.trim() === this.errorEvent.message.trim();
    try {
      await this.deliverFinal(errorOnly ? "" : e.text.trim(), outcome);
    } catch (err) {
      outcome.error = (err as Error).message;
      this.relay.logger?.error(
        { err: (err as Error).message, chatId: this.chatId },
        "could not deliver the final answer",
      );
    }
    this.ledger("closed");
    if (e.finishReason === "error") {
      const msg = this.errorEvent?.message ?? "Something went wrong while answering. Please try again.";
      await this.relay.errorReply(this.chatId, this.errorEvent?.code ?? "error", msg, this.createdAt);
    }
    this.resolveDone(outcome);
  }

  private async deliverFinal(text: string, outcome: RelayOutcome): Promise<void> {
    const { adapter } = this.relay;
    if (!text) {
      if (this.previewId !== undefined)
        await adapter.delete(this.chatId, this.previewId).catch(() => undefined);
      return;
    }
    const chunks = chunkMarkdown(text, adapter.limits);
    let rest = chunks;
    if (this.previewId !== undefined && !this.previewBroken) {
      const first = chunks[0] ?? "";
      try {
        // The final edit keeps the chat's pacing too (it is the edit most likely to hit a 429).
        const wait = this.relay.editWait(this.chatId);
        if (wait > 0 && first !== this.shown) await sleep(this.clock, wait);
        if (first !== this.shown) await adapter.edit(this.chatId, this.previewId, first, { markdown: true });
        outcome.finalMessageIds.push(this.previewId);
        rest = chunks.slice(1);
      } catch (err) {
        this.previewBroken = true;
        this.relay.logger?.warn({ err: (err as Error).message, chatId: this.chatId }, "final edit failed");
      }
    }
    const fallback = this.previewId !== undefined && this.previewBroken;
    for (const c of rest)
      outcome.finalMessageIds.push(await adapter.send(this.chatId, c, { markdown: true }));
    if (fallback && this.previewId !== undefined) {
      outcome.fellBack = true;
      await adapter.delete(this.chatId, this.previewId).catch((err: unknown) => {
        this.relay.logger?.warn({ err: (err as Error).message }, "could not delete the preview");
      });
    }
  }
}
