/**
 * The reply of one turn on its way to one chat (created by `StreamRelay.stream`): a preview edited
 * as text arrives, then the final text delivered exactly once. The invariants are in stream-relay.ts.
 */
import { APPROVAL_ANSWERED_NOTICE, APPROVAL_WAIT_NOTICE, type AgentEvent } from "../../core/agent-events.js";
import { sleep, type Clock, type TimerHandle } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import type { RelayOutcome, ReplyStreamPort } from "../../inbound/reply-relay.js";
import { TYPING_INTERVAL_MS, type ChatAdapter, type RelayOptions } from "./chat-adapter.js";
import { chunkMarkdown } from "./chunking.js";
import type { PreviewLedger } from "./preview-ledger.js";

/** What a stream uses of its relay: the platform, per-chat pacing, the error reply limit, the ledger. */
export interface RelayForStream {
  readonly adapter: ChatAdapter;
  readonly logger?: Logger | undefined;
  readonly ledger?: PreviewLedger | undefined;
  editWait(chatId: string): number;
  markEdited(chatId: string, intervalMs: number): void;
  errorReply(chatId: string, code: string, text: string, since?: number): Promise<boolean>;
}

/** The reply of one turn. Call `onEvent` for each AgentEvent; `done` settles after delivery. */
export class ReplyStream implements ReplyStreamPort {
  private buffer = "";
  private toolLine: string | undefined;
  private previewId: string | undefined;
  private previewBroken = false;
  private shown = "";
  private timer: TimerHandle | undefined;
  private typingTimer: TimerHandle | undefined;
  /** Approval questions this turn waits on: no "typing…" while any is open (the owner moves next). */
  private waits = 0;
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
    private relay: RelayForStream,
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
        else if (e.kind === APPROVAL_WAIT_NOTICE) this.pauseTyping();
        else if (e.kind === APPROVAL_ANSWERED_NOTICE && this.waits > 0 && --this.waits === 0)
          this.startTyping();
        break;
      case "turn_end":
        void this.finish(e);
        break;
      default:
        break;
    }
  };

  /** Stops "typing…" while the turn waits for the owner (resumed when every question settled). */
  private pauseTyping(): void {
    this.waits++;
    if (this.typingTimer) this.clock.clearTimeout(this.typingTimer);
    this.typingTimer = undefined;
  }

  /** Starts the typing indicator now (before the turn starts, e.g. while queued). */
  startTyping(): void {
    if (this.typingTimer || this.finished || this.waits > 0) return;
    const tick = (): void => {
      if (this.finished || this.waits > 0) return;
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
