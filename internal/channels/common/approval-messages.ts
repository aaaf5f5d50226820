/**
 * The approval questions a chat channel sent, so they can be closed and shown whole: when a request
 * closes (answered, expired, withdrawn because its turn ended) its buttons are edited away and a line
 * says how it ended; "Show all" sends the whole question to the presser's private chat.
 *
 * Invariants:
 * - a closed question keeps no button (the edit carries none), so nobody presses a dead question;
 * - only questions sent since the daemon started are remembered (a restart denies every pending
 *   request anyway, see ApprovalManager.denyAll);
 * - the whole text goes only where the channel says (the owner's private chat), chunked by the relay.
 */
import type { Logger } from "../../log/logger.js";
import { chunkMarkdown } from "./chunking.js";
import type { ChatAdapter, OutboundOptions } from "./chat-adapter.js";

/** What the remembering needs of the relay. */
export interface ApprovalSender {
  sendText(chatId: string, text: string, opts: OutboundOptions): Promise<string[]>;
}

interface SentQuestion {
  addr: string;
  /** The message that carries the buttons (the last chunk). */
  messageId: string;
  /** That message's text, kept under the closing line. */
  lastChunk: string;
}

/** Sent approval questions of one channel, by approval id. */
export class ApprovalMessages {
  private sent = new Map<string, SentQuestion>();
  /** Questions on their way to the platform, and closes that arrived before their send finished. */
  private sending = new Set<string>();
  private early = new Map<string, string>();

  constructor(
    private relay: ApprovalSender,
    private adapter: Pick<ChatAdapter, "edit" | "limits">,
    private logger?: Logger,
  ) {}

  /** Sends a question (chunked, buttons on the last chunk) and remembers it. */
  async send(addr: string, text: string, opts: OutboundOptions & { approvalId: string }): Promise<void> {
    const id = opts.approvalId;
    this.sending.add(id);
    let ids: string[];
    try {
      ids = await this.relay.sendText(addr, text, opts);
    } catch (err) {
      this.early.delete(id);
      throw err;
    } finally {
      this.sending.delete(id);
    }
    const messageId = ids[ids.length - 1];
    const chunks = chunkMarkdown(text, this.adapter.limits);
    if (messageId !== undefined)
      this.sent.set(id, { addr, messageId, lastChunk: chunks[chunks.length - 1] ?? "" });
    // Settled (expired, answered elsewhere) while the platform was still taking it: close it now,
    // so no question keeps live buttons however slow its delivery was.
    const note = this.early.get(id);
    if (note !== undefined) {
      this.early.delete(id);
      await this.close(id, note);
    }
  }

  /** Edits the question's buttons away with `note` under it; false when this channel never sent it. */
  async close(approvalId: string, note: string): Promise<boolean> {
    const q = this.sent.get(approvalId);
    if (!q) {
      if (!this.sending.has(approvalId)) return false;
      this.early.set(approvalId, note);
      return true;
    }
    this.sent.delete(approvalId);
    const room = Math.max(0, this.adapter.limits.maxLength - note.length - 4);
    const body = q.lastChunk.length > room ? `${q.lastChunk.slice(0, room)}…` : q.lastChunk;
    try {
      await this.adapter.edit(q.addr, q.messageId, `${body}\n\n[${note}]`, { markdown: false });
    } catch (err) {
      this.logger?.warn({ approvalId, err: (err as Error).message }, "could not close an approval question");
    }
    return true;
  }

  /** Sends the whole question text to `addr` (the presser's private chat), chunked. */
  async showAll(addr: string, text: string): Promise<void> {
    await this.relay.sendText(addr, text, { markdown: false });
  }

  /**
   * "Show all" pressed: the whole question (`show` finds it) to `addr`, the presser's private chat,
   * never a group; returns the line that answers the press (`where` names that chat).
   */
  async showWhole(
    show: (approvalId: string) => { text: string } | undefined,
    approvalId: string,
    addr: string,
    where: string,
  ): Promise<string> {
    const a = show(approvalId);
    if (!a) return "That question is no longer open.";
    await this.showAll(addr, a.text);
    return `Sent the whole question to ${where}.`;
  }
}
