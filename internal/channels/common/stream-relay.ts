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
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import { chunkMarkdown } from "./chunking.js";
import type { DeliveryLedger } from "./delivery-ledger.js";
import type { PreviewLedger } from "./preview-ledger.js";
import type { ReplyRelay } from "../../inbound/reply-relay.js";
import {
  ERROR_REPLY_INTERVAL_MS,
  type ChatAdapter,
  type OutboundOptions,
  type RelayOptions,
} from "./chat-adapter.js";
import { ReplyStream } from "./reply-stream.js";

export * from "./chat-adapter.js";
export { ReplyStream } from "./reply-stream.js";

/** Options of one outbound message. */
export type { RelayOutcome } from "../../inbound/reply-relay.js";

/**
 * One per channel: owns per-chat pacing and error rate limits, and creates a {@link ReplyStream}
 * per turn.
 */
export class StreamRelay implements ReplyRelay {
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
      if (last && opts.approvalId && opts.approvalHash) o.approvalHash = opts.approvalHash;
      if (last && opts.approvalId && opts.approvalChoices?.length) o.approvalChoices = opts.approvalChoices;
      if (last && opts.approvalId && opts.approvalShowAll) o.approvalShowAll = true;
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
