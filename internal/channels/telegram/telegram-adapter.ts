/**
 * The Telegram side of the stream relay: send/edit/delete/typing over grammY's Api, with markdown
 * rendered as Telegram HTML (plain-text fallback when Telegram cannot parse it), approval buttons,
 * per-chat pacing, and errors mapped to ChannelError (refused vs unreachable).
 *
 * Chat addresses are `<chatId>` or `<chatId>:<threadId>` (forum topics).
 */
import { GrammyError, HttpError, InputFile, type Api } from "grammy";
import type { InlineKeyboardMarkup } from "grammy/types";
import { ChannelError, type OutboundFile, type OutboundFileKind } from "../channel.js";
import { chunkMarkdown, TELEGRAM_LIMITS } from "../common/chunking.js";
import type { ChatAdapter, OutboundOptions } from "../common/stream-relay.js";
import { sleep, type Clock } from "../../core/clock.js";
import { markdownToTelegramHtml } from "./markdown-html.js";
import { approveData, denyData, showData } from "../common/approval-buttons.js";

/** Minimum gap between messages to one chat (Telegram: ~1/s per chat, 20/min in groups). */
export const PRIVATE_GAP_MS = 50;
export const GROUP_GAP_MS = 1000;

/** Bot API upload limits (api.telegram.org): photos 10 MB, every other file 50 MB. */
export const TELEGRAM_FILE_LIMITS: Readonly<Record<OutboundFileKind, number>> = {
  photo: 10 * 1024 * 1024,
  document: 50 * 1024 * 1024,
  audio: 50 * 1024 * 1024,
  voice: 50 * 1024 * 1024,
};
/** Longest caption Telegram accepts; a longer one follows the file as a message. */
export const TELEGRAM_CAPTION_MAX = 1024;

export function parseChatAddress(addr: string): { chatId: string; threadId?: number } {
  const m = /^(-?\d+)(?::(\d+))?$/.exec(addr.trim());
  if (!m)
    throw new ChannelError(
      "CHANNEL_UNKNOWN_TARGET",
      `invalid Telegram chat "${addr}" (expected a numeric chat id)`,
    );
  return m[2] ? { chatId: m[1] ?? "", threadId: Number(m[2]) } : { chatId: m[1] ?? "" };
}

/** True for Telegram's "can't parse entities" family of 400s. */
export function isParseError(err: unknown): boolean {
  return (
    err instanceof GrammyError &&
    err.error_code === 400 &&
    /can't parse entities|unsupported start tag|can't find end tag/i.test(err.description)
  );
}

function isNotModified(err: unknown): boolean {
  return (
    err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description)
  );
}

/** Maps a grammY failure to a ChannelError. */
export function toChannelError(err: unknown, what: string): ChannelError {
  if (err instanceof ChannelError) return err;
  if (err instanceof GrammyError)
    return new ChannelError(
      "CHANNEL_REFUSED",
      `Telegram refused ${what}: ${err.error_code} ${err.description}`,
      { cause: err },
    );
  if (err instanceof HttpError)
    return new ChannelError("CHANNEL_UNREACHABLE", `Telegram unreachable during ${what}: ${err.message}`, {
      cause: err,
    });
  return new ChannelError("CHANNEL_UNREACHABLE", `${what} failed: ${(err as Error).message}`, { cause: err });
}

function keyboard(opts: OutboundOptions & { approvalId: string }): InlineKeyboardMarkup {
  const { approvalId: id, approvalHash: hash } = opts;
  // Approve carries the shown payload's hash prefix (approval-buttons.ts): a press settles only it.
  const rows = [
    [
      { text: "✅ Approve", callback_data: approveData(id, hash) },
      { text: "❌ Deny", callback_data: denyData(id) },
    ],
  ];
  // Containment's standing answers: `approve:<id>:<hash>:host` / `…:session`.
  if (opts.approvalChoices?.length)
    rows.push(
      opts.approvalChoices.map((c) => ({
        text: c === "host" ? "✅ Yes for this host" : "✅ Yes for this session",
        callback_data: approveData(id, hash, c),
      })),
    );
  // A cut question: the press sends the whole text to the owner's private chat (`show:<id>`).
  if (opts.approvalShowAll) rows.push([{ text: "📄 Show all", callback_data: showData(id) }]);
  return { inline_keyboard: rows };
}

export class TelegramAdapter implements ChatAdapter {
  readonly limits = TELEGRAM_LIMITS;
  private lastSend = new Map<string, number>();
  private chains = new Map<string, Promise<unknown>>();

  constructor(
    private api: () => Api,
    private clock: Clock,
  ) {}

  /** Serialises calls per chat and keeps the minimum gap between them. */
  private paced<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(chatId) ?? Promise.resolve();
    const gap = chatId.startsWith("-") ? GROUP_GAP_MS : PRIVATE_GAP_MS;
    const run = async (): Promise<T> => {
      const wait = (this.lastSend.get(chatId) ?? 0) + gap - this.clock.now();
      if (wait > 0) await sleep(this.clock, wait);
      try {
        return await fn();
      } finally {
        this.lastSend.set(chatId, this.clock.now());
      }
    };
    const p = prev.then(run, run);
    const tail = p.catch(() => undefined);
    this.chains.set(chatId, tail);
    void tail.then(() => {
      if (this.chains.get(chatId) === tail) this.chains.delete(chatId);
    });
    return p;
  }

  async send(addr: string, text: string, opts: OutboundOptions): Promise<string> {
    const { chatId, threadId } = parseChatAddress(addr);
    const other = {
      ...(threadId !== undefined ? { message_thread_id: threadId } : {}),
      link_preview_options: { is_disabled: true },
      ...(opts.silent ? { disable_notification: true } : {}),
      ...(opts.approvalId ? { reply_markup: keyboard({ ...opts, approvalId: opts.approvalId }) } : {}),
    };
    return this.paced(chatId, async () => {
      try {
        if (opts.markdown) {
          try {
            const m = await this.api().sendMessage(chatId, markdownToTelegramHtml(text), {
              ...other,
              parse_mode: "HTML",
            });
            return String(m.message_id);
          } catch (err) {
            if (!isParseError(err)) throw err;
          }
        }
        const m = await this.api().sendMessage(chatId, text, other);
        return String(m.message_id);
      } catch (err) {
        throw toChannelError(err, "sendMessage");
      }
    });
  }

  async edit(addr: string, messageId: string, text: string, opts: OutboundOptions): Promise<void> {
    const { chatId } = parseChatAddress(addr);
    const other = {
      link_preview_options: { is_disabled: true },
      ...(opts.approvalId ? { reply_markup: keyboard({ ...opts, approvalId: opts.approvalId }) } : {}),
    };
    await this.paced(chatId, async () => {
      try {
        if (opts.markdown) {
          try {
            await this.api().editMessageText(chatId, Number(messageId), markdownToTelegramHtml(text), {
              ...other,
              parse_mode: "HTML",
            });
            return;
          } catch (err) {
            if (isNotModified(err)) return;
            if (!isParseError(err)) throw err;
          }
        }
        await this.api().editMessageText(chatId, Number(messageId), text, other);
      } catch (err) {
        if (isNotModified(err)) return;
        throw toChannelError(err, "editMessageText");
      }
    });
  }

  async delete(addr: string, messageId: string): Promise<void> {
    const { chatId } = parseChatAddress(addr);
    await this.paced(chatId, async () => {
      try {
        await this.api().deleteMessage(chatId, Number(messageId));
      } catch (err) {
        throw toChannelError(err, "deleteMessage");
      }
    });
  }

  async typing(addr: string): Promise<void> {
    const { chatId, threadId } = parseChatAddress(addr);
    // Not paced: a typing indicator must never delay a real message.
    await this.api()
      .sendChatAction(chatId, "typing", threadId !== undefined ? { message_thread_id: threadId } : {})
      .catch(() => undefined);
  }

  maxFileBytes(kind: OutboundFileKind): number {
    return TELEGRAM_FILE_LIMITS[kind];
  }

  async sendFile(addr: string, file: OutboundFile): Promise<string> {
    const { chatId, threadId } = parseChatAddress(addr);
    const limit = TELEGRAM_FILE_LIMITS[file.kind];
    if (file.data.length > limit)
      throw new ChannelError(
        "CHANNEL_FILE_TOO_LARGE",
        `${file.name} is ${file.data.length} bytes; Telegram takes at most ${limit} for a ${file.kind}`,
      );
    const caption = file.caption?.trim() ?? "";
    const fits = caption.length <= TELEGRAM_CAPTION_MAX;
    const other = {
      ...(threadId !== undefined ? { message_thread_id: threadId } : {}),
      ...(caption && fits ? { caption } : {}),
    };
    const input = new InputFile(file.data, file.name);
    const id = await this.paced(chatId, async () => {
      try {
        const api = this.api();
        const m =
          file.kind === "photo"
            ? await api.sendPhoto(chatId, input, other)
            : file.kind === "voice"
              ? await api.sendVoice(chatId, input, other)
              : file.kind === "audio"
                ? await api.sendAudio(chatId, input, other)
                : await api.sendDocument(chatId, input, other);
        return String(m.message_id);
      } catch (err) {
        throw toChannelError(err, `send${file.kind[0]?.toUpperCase()}${file.kind.slice(1)}`);
      }
    });
    // A caption over Telegram's limit follows as its own message(s), never cut.
    if (caption && !fits)
      for (const c of chunkMarkdown(caption, this.limits)) await this.send(addr, c, { markdown: true });
    return id;
  }
}
