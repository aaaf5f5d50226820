/**
 * A fake Telegram Bot API server on 127.0.0.1 (node:http, port 0) for tests. grammY talks to it via
 * `client.apiRoot`. It keeps just enough state to behave like the real thing:
 *
 * - `getUpdates` does REAL long polling: the request is held until an update is pushed or `timeout`
 *   seconds pass; `offset` confirms (drops) every earlier update, as Telegram does;
 * - messages get per-chat ids; `editMessageText` with unchanged text answers Telegram's
 *   "message is not modified" 400; edits/deletes of unknown messages answer 400;
 * - `parse_mode: HTML` is validated (known tags, balanced nesting, entities) and answers
 *   "can't parse entities" like Telegram; `rejectHtml` forces that for matching texts;
 * - failures are scripted per method (`failNext`): 429 with `parameters.retry_after`, 5xx, 401, or a
 *   call held forever (`hang`) or a connection closed without an answer (`drop`);
 * - `stallPolls(n)`: the next n long polls are held forever without an answer (a stalled connection);
 * - `dropPolls(n)`: the next n long polls are cut (socket destroyed) at the moment they would answer,
 *   so updates in flight never reach the bot and, unconfirmed, are sent again by the next poll;
 * - files registered with `addFile` are served by `getFile` and `/file/bot<token>/<path>`;
 * - every call is recorded in `calls` (method, params, time, outcome).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseMultipart } from "./multipart.js";

export interface RecordedCall {
  method: string;
  params: Record<string, unknown>;
  at: number;
  /** `performance.now()` when the call arrived (benchmarks compare it with the fake model's clock). */
  hr?: number;
  /** HTTP status answered. */
  status: number;
}

export interface FakeMessage {
  chatId: string;
  messageId: number;
  text: string;
  parseMode?: string;
  threadId?: number;
  replyMarkup?: unknown;
  deleted: boolean;
  /** Every text the message had, in order (send, then edits). */
  history: string[];
}

/** A file the bot sent. */
export interface SentFile {
  chatId: string;
  messageId: number;
  method: string;
  name: string;
  data: Buffer;
  caption?: string;
  threadId?: number;
}

export interface ScriptedFailure {
  status: number;
  description?: string;
  retryAfter?: number;
  /** Hold the call forever without an answer (recorded with status 0): a send the bot never sees confirmed. */
  hang?: boolean;
  /**
   * Close the connection without an answer (recorded with status 0), as a server does when it drops
   * an idle keep-alive connection just as the client reuses it: the client sees a network error.
   */
  drop?: boolean;
}

export interface FakeUser {
  id: number;
  first_name: string;
  username?: string;
  is_bot?: boolean;
}

const ALLOWED_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "code",
  "pre",
  "a",
  "tg-spoiler",
  "span",
  "blockquote",
  "tg-emoji",
]);

/** Validates Telegram HTML roughly as the Bot API does. Returns an error description or undefined. */
export function telegramHtmlProblem(text: string): string | undefined {
  const stack: string[] = [];
  const re = /<(\/?)([a-zA-Z-]+)([^>]*)>|&([a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);|[<>&]/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0] === "<" || m[0] === ">")
      return `can't parse entities: unexpected "${m[0]}" at byte offset ${m.index}`;
    if (m[0] === "&") return `can't parse entities: unescaped "&" at byte offset ${m.index}`;
    if (m[4] !== undefined) {
      if (/^[a-zA-Z]+$/.test(m[4]) && !["lt", "gt", "amp", "quot"].includes(m[4]))
        return `can't parse entities: unsupported entity "&${m[4]};" at byte offset ${m.index}`;
      continue;
    }
    const tag = (m[2] ?? "").toLowerCase();
    if (!ALLOWED_TAGS.has(tag))
      return `can't parse entities: unsupported start tag "${tag}" at byte offset ${m.index}`;
    if (m[1]) {
      if (stack.pop() !== tag)
        return `can't parse entities: can't find end tag corresponding to start tag "${tag}"`;
    } else stack.push(tag);
  }
  if (stack.length > 0)
    return `can't parse entities: can't find end tag corresponding to start tag "${stack.at(-1)}"`;
  return undefined;
}

/** Visible length of Telegram HTML (tags removed, entities decoded). */
export function visibleLength(html: string): number {
  return html.replace(/<[^>]+>/g, "").replace(/&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);/g, "x").length;
}

export class FakeTelegramServer {
  readonly calls: RecordedCall[] = [];
  readonly messages: FakeMessage[] = [];
  readonly bot: FakeUser = { id: 4242, first_name: "Familiar", username: "familiar_test_bot", is_bot: true };
  /** Commands set with setMyCommands. */
  commands: { command: string; description: string }[] = [];
  /** Texts (before HTML validation) matching this are rejected as unparsable HTML. */
  rejectHtml: ((text: string) => boolean) | undefined;
  private server: Server;
  private updates: { update_id: number; [k: string]: unknown }[] = [];
  private nextUpdateId = 1000;
  private nextMsgId = new Map<string, number>();
  private waiters = new Set<() => void>();
  private failures = new Map<string, ScriptedFailure[]>();
  private files = new Map<string, { path: string; data: Buffer }>();
  /** Files the bot uploaded (sendDocument, sendPhoto, sendVoice, sendAudio), in order. */
  readonly sentFiles: SentFile[] = [];
  private changeWaiters = new Set<() => void>();
  private userMsgId = 1;
  /** Highest offset a getUpdates call confirmed. */
  confirmedOffset = 0;
  /** Long polls still to be cut (see `dropPolls`). */
  private pollDrops = 0;
  /** Long polls cut so far. */
  droppedPolls = 0;
  /** Long polls still to be held without an answer (see `stallPolls`). */
  private pollStalls = 0;
  /** Stalled long polls: held so far, and given up (closed) by the client. */
  stalledPolls = 0;
  abandonedStalls = 0;
  /**
   * While set, getUpdates answers an empty list (after its long-poll timeout) however many updates
   * are queued: the poller "works" but hears nothing (a broken proxy, a second consumer). The updates
   * stay pending (`getWebhookInfo.pending_update_count` shows them) until `silent` is cleared.
   */
  silent = false;

  constructor(readonly token = "123456:TEST-token") {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  /** Starts listening; resolves with the api root for grammY (`client.apiRoot`). */
  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return this.apiRoot;
  }
  get apiRoot(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }
  async close(): Promise<void> {
    for (const w of this.waiters) w();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Scripts the next `count` calls of `method` to fail. */
  failNext(method: string, failure: ScriptedFailure, count = 1): void {
    const list = this.failures.get(method) ?? [];
    for (let i = 0; i < count; i++) list.push(failure);
    this.failures.set(method, list);
  }

  /** Cuts the next `count` long polls when they would answer (a dropped connection mid-poll). */
  dropPolls(count = 1): void {
    this.pollDrops += count;
  }

  /**
   * Holds the next `count` long polls forever: no answer, no error, the connection stays open (a
   * stalled proxy or NAT). Updates pushed meanwhile wait for the next poll.
   */
  stallPolls(count = 1): void {
    this.pollStalls += count;
  }

  /** Registers a downloadable file; returns its file_id. */
  addFile(data: Buffer, path = `photos/file_${this.files.size + 1}.jpg`): string {
    const id = `FILE${this.files.size + 1}`;
    this.files.set(id, { path, data });
    return id;
  }

  // --- pushing updates ------------------------------------------------------------------------

  /** Queues a raw update (an `update_id` is assigned). Returns the id. */
  pushUpdate(update: Record<string, unknown>): number {
    const update_id = this.nextUpdateId++;
    this.updates.push({ update_id, ...update });
    for (const w of [...this.waiters]) w();
    return update_id;
  }

  private baseMessage(
    chat: Record<string, unknown>,
    from: FakeUser,
    extra: Record<string, unknown>,
  ): Record<string, unknown> {
    return { message_id: this.userMsgId++, date: Math.floor(Date.now() / 1000), chat, from, ...extra };
  }

  /** A private (DM) text message from `from`. */
  pushText(from: FakeUser, text: string, extra: Record<string, unknown> = {}): number {
    const chat = { id: from.id, type: "private", first_name: from.first_name };
    const entities = /^\/\w+/.test(text)
      ? [{ type: "bot_command", offset: 0, length: (/^\/\S+/.exec(text)?.[0] ?? "").length }]
      : undefined;
    return this.pushUpdate({
      message: this.baseMessage(chat, from, { text, ...(entities ? { entities } : {}), ...extra }),
    });
  }

  /** A group message. */
  pushGroupText(chatId: number, from: FakeUser, text: string, extra: Record<string, unknown> = {}): number {
    const chat = { id: chatId, type: "supergroup", title: "Test group" };
    return this.pushUpdate({ message: this.baseMessage(chat, from, { text, ...extra }) });
  }

  /** A private photo message (the file must be registered with addFile). */
  pushPhoto(from: FakeUser, fileId: string, caption?: string, size = 1000): number {
    const chat = { id: from.id, type: "private", first_name: from.first_name };
    const photo = [
      { file_id: `${fileId}_small`, file_unique_id: `${fileId}u_s`, width: 90, height: 90, file_size: 100 },
      { file_id: fileId, file_unique_id: `${fileId}u`, width: 800, height: 600, file_size: size },
    ];
    return this.pushUpdate({
      message: this.baseMessage(chat, from, { photo, ...(caption ? { caption } : {}) }),
    });
  }

  /** A private voice message (register the audio with addFile). */
  pushVoice(from: FakeUser, fileId: string, size = 2000): number {
    const chat = { id: from.id, type: "private", first_name: from.first_name };
    const voice = {
      file_id: fileId,
      file_unique_id: `${fileId}u`,
      duration: 3,
      mime_type: "audio/ogg",
      file_size: size,
    };
    return this.pushUpdate({ message: this.baseMessage(chat, from, { voice }) });
  }

  /** A private document message (register the bytes with addFile). */
  pushDocument(
    from: FakeUser,
    fileId: string,
    doc: { name: string; mime?: string; size?: number; caption?: string },
  ): number {
    const chat = { id: from.id, type: "private", first_name: from.first_name };
    const document = {
      file_id: fileId,
      file_unique_id: `${fileId}u`,
      file_name: doc.name,
      ...(doc.mime ? { mime_type: doc.mime } : {}),
      file_size: doc.size ?? this.files.get(fileId)?.data.length ?? 0,
    };
    return this.pushUpdate({
      message: this.baseMessage(chat, from, { document, ...(doc.caption ? { caption: doc.caption } : {}) }),
    });
  }

  /**
   * A callback query (inline button press) on a bot message; `inGroup` puts the message in a group
   * (and forum topic) instead of the presser's private chat.
   */
  pushCallback(
    from: FakeUser,
    data: string,
    messageId = 1,
    inGroup?: { chatId: number; threadId?: number },
  ): number {
    const chat = inGroup
      ? {
          id: inGroup.chatId,
          type: "supergroup",
          title: "Test group",
          is_forum: inGroup.threadId !== undefined,
        }
      : { id: from.id, type: "private", first_name: from.first_name };
    const topic =
      inGroup?.threadId !== undefined ? { is_topic_message: true, message_thread_id: inGroup.threadId } : {};
    return this.pushUpdate({
      callback_query: {
        id: `cb${this.nextUpdateId}`,
        from,
        chat_instance: "ci",
        data,
        message: {
          message_id: messageId,
          date: Math.floor(Date.now() / 1000),
          chat,
          text: "approval",
          ...topic,
        },
      },
    });
  }

  // --- inspecting ---------------------------------------------------------------------------

  /** Messages of a chat that are not deleted, in order. */
  visible(chatId: number | string): FakeMessage[] {
    return this.messages.filter((m) => m.chatId === String(chatId) && !m.deleted);
  }
  /**
   * The call log for a failure message: each method with its HTTP status when it was not 200, the
   * start of the text it sent or edited and when it was answered (ms after the first call), so a
   * timed-out wait says what the daemon did do.
   */
  callLog(): string {
    const t0 = this.calls[0]?.at ?? 0;
    return this.calls
      .map((c) => {
        const status = c.status === 200 ? "" : `[${c.status}]`;
        const text =
          typeof c.params.text === "string" ? `(${JSON.stringify(c.params.text.slice(0, 40))})` : "";
        return `${c.method}${status}${text}@${c.at - t0}ms`;
      })
      .join(",");
  }
  /** Recorded calls of one method. */
  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }
  /** Waits until `pred` holds (re-checked on every call), or rejects after `timeoutMs`. */
  async waitFor(pred: () => boolean, timeoutMs = 15_000, what = "condition"): Promise<void> {
    if (pred()) return;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!pred()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${what}; calls: ${this.callLog()}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.changeWaiters.delete(check);
      };
      this.changeWaiters.add(check);
    });
  }
  private changed(): void {
    for (const w of [...this.changeWaiters]) w();
  }

  // --- HTTP -----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      const f = [...this.files.values()].find((x) => x.path === fileMatch[2]);
      if (fileMatch[1] !== this.token || !f) {
        res.writeHead(404).end("Not Found");
        return;
      }
      res.writeHead(200, { "content-type": "application/octet-stream" }).end(f.data);
      return;
    }
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!m) {
      res.writeHead(404).end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
      return;
    }
    const method = m[2] ?? "";
    const hr = performance.now();
    const params = await readParams(req, url);
    const reply = (status: number, body: Record<string, unknown>): void => {
      this.calls.push({ method, params, at: Date.now(), hr, status });
      if (!res.writableEnded && !res.destroyed) {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      }
      this.changed();
    };
    const ok = (result: unknown): void => reply(200, { ok: true, result });
    const fail = (status: number, description: string, parameters?: Record<string, unknown>): void =>
      reply(status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) });
    if (m[1] !== this.token) return fail(401, "Unauthorized");
    const scripted = this.failures.get(method)?.shift();
    if (scripted) {
      if (scripted.hang || scripted.drop) {
        this.calls.push({ method, params, at: Date.now(), status: 0 });
        if (scripted.drop) res.destroy();
        this.changed();
        return;
      }
      if (scripted.status === 429)
        return fail(
          429,
          scripted.description ?? `Too Many Requests: retry after ${scripted.retryAfter ?? 1}`,
          {
            retry_after: scripted.retryAfter ?? 1,
          },
        );
      return fail(scripted.status, scripted.description ?? "Internal Server Error");
    }
    switch (method) {
      case "getMe":
        return ok(this.bot);
      case "getUpdates":
        return this.getUpdates(params, res, ok);
      case "getWebhookInfo":
        return ok({
          url: "",
          has_custom_certificate: false,
          pending_update_count: this.updates.filter((u) => u.update_id >= this.confirmedOffset).length,
        });
      case "deleteWebhook":
      case "setWebhook":
      case "sendChatAction":
      case "answerCallbackQuery":
        return ok(true);
      case "setMyCommands":
        this.commands = (params.commands as { command: string; description: string }[]) ?? [];
        return ok(true);
      case "getFile": {
        const f = this.files.get(String(params.file_id));
        if (!f) return fail(400, "Bad Request: invalid file_id");
        return ok({
          file_id: params.file_id,
          file_unique_id: `${String(params.file_id)}u`,
          file_size: f.data.length,
          file_path: f.path,
        });
      }
      case "sendDocument":
      case "sendPhoto":
      case "sendVoice":
      case "sendAudio": {
        const field = method.slice(4).toLowerCase();
        const f = params[field] as UploadedFile | string | undefined;
        if (!f || typeof f === "string" || !f.upload)
          return fail(400, `Bad Request: there is no ${field} in the request`);
        const caption = params.caption === undefined ? undefined : String(params.caption);
        if (caption !== undefined && caption.length > 1024)
          return fail(400, "Bad Request: message caption is too long");
        const chatId = String(params.chat_id);
        const id = (this.nextMsgId.get(chatId) ?? 0) + 1;
        this.nextMsgId.set(chatId, id);
        this.sentFiles.push({
          chatId,
          messageId: id,
          method,
          name: f.name,
          data: f.data,
          ...(caption !== undefined ? { caption } : {}),
          ...(params.message_thread_id !== undefined ? { threadId: Number(params.message_thread_id) } : {}),
        });
        return ok({
          message_id: id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chatId), type: "private" },
          ...(caption !== undefined ? { caption } : {}),
        });
      }
      case "sendMessage": {
        const chatId = String(params.chat_id);
        const text = String(params.text ?? "");
        const problem = this.textProblem(text, params.parse_mode);
        if (problem) return fail(400, `Bad Request: ${problem}`);
        const id = (this.nextMsgId.get(chatId) ?? 0) + 1;
        this.nextMsgId.set(chatId, id);
        const msg: FakeMessage = {
          chatId,
          messageId: id,
          text,
          ...(params.parse_mode ? { parseMode: String(params.parse_mode) } : {}),
          ...(params.message_thread_id !== undefined ? { threadId: Number(params.message_thread_id) } : {}),
          ...(params.reply_markup ? { replyMarkup: params.reply_markup } : {}),
          deleted: false,
          history: [text],
        };
        this.messages.push(msg);
        return ok({
          message_id: id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chatId), type: "private" },
          text,
        });
      }
      case "editMessageText": {
        const msg = this.find(params);
        if (!msg) return fail(400, "Bad Request: message to edit not found");
        const text = String(params.text ?? "");
        const problem = this.textProblem(text, params.parse_mode);
        if (problem) return fail(400, `Bad Request: ${problem}`);
        if (text === msg.text && String(params.parse_mode ?? "") === (msg.parseMode ?? ""))
          return fail(
            400,
            "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
          );
        msg.text = text;
        msg.history.push(text);
        if (params.parse_mode) msg.parseMode = String(params.parse_mode);
        else delete msg.parseMode;
        // As Telegram does: an edit without reply_markup removes the inline keyboard.
        if (params.reply_markup) msg.replyMarkup = params.reply_markup;
        else delete msg.replyMarkup;
        return ok({
          message_id: msg.messageId,
          date: 0,
          chat: { id: Number(msg.chatId), type: "private" },
          text,
        });
      }
      case "deleteMessage": {
        const msg = this.find(params);
        if (!msg) return fail(400, "Bad Request: message to delete not found");
        msg.deleted = true;
        return ok(true);
      }
      default:
        return fail(404, "Not Found: method not found");
    }
  }

  private textProblem(text: string, parseMode: unknown): string | undefined {
    if (text.trim().length === 0) return "message text is empty";
    if (parseMode === "HTML") {
      if (this.rejectHtml?.(text)) return 'can\'t parse entities: unsupported start tag "x" at byte offset 0';
      const p = telegramHtmlProblem(text);
      if (p) return p;
      if (visibleLength(text) > 4096) return "message is too long";
    } else if (text.length > 4096) return "message is too long";
    return undefined;
  }

  private find(params: Record<string, unknown>): FakeMessage | undefined {
    return this.messages.find(
      (x) => x.chatId === String(params.chat_id) && x.messageId === Number(params.message_id) && !x.deleted,
    );
  }

  private getUpdates(params: Record<string, unknown>, res: ServerResponse, ok: (r: unknown) => void): void {
    const offset = Number(params.offset ?? 0);
    if (offset > 0) {
      this.confirmedOffset = Math.max(this.confirmedOffset, offset);
      this.updates = this.updates.filter((u) => u.update_id >= offset);
    }
    if (this.pollStalls > 0) {
      this.pollStalls--;
      this.stalledPolls++;
      this.changed();
      res.once("close", () => {
        this.abandonedStalls++;
        this.changed();
      });
      return;
    }
    const limit = Number(params.limit ?? 100);
    const timeoutS = Number(params.timeout ?? 0);
    const pending = (): typeof this.updates =>
      this.silent ? [] : this.updates.filter((u) => u.update_id >= offset).slice(0, limit);
    const drop = this.pollDrops > 0;
    if (drop) this.pollDrops--;
    const answer = (updates: typeof this.updates): void => {
      if (!drop) return ok(updates);
      // The connection dies with the answer in flight: nothing is confirmed, nothing delivered.
      this.droppedPolls++;
      this.calls.push({ method: "getUpdates", params, at: Date.now(), status: 0 });
      res.destroy();
      this.changed();
    };
    const now = pending();
    if (now.length > 0 || timeoutS <= 0) return answer(now);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.waiters.delete(wake);
      answer(pending());
    };
    const wake = (): void => finish();
    const timer = setTimeout(finish, timeoutS * 1000);
    this.waiters.add(wake);
    res.once("close", () => {
      done = true;
      clearTimeout(timer);
      this.waiters.delete(wake);
    });
  }
}

async function readParams(req: IncomingMessage, url: URL): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of url.searchParams) out[k] = v;
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const rawBody = Buffer.concat(chunks);
  const body = rawBody.toString("utf8");
  if (!body) return out;
  const type = req.headers["content-type"] ?? "";
  if (type.includes("multipart/form-data")) {
    // grammY uploads files (InputFile) as multipart: fields are JSON-ish strings, files are parts.
    for (const part of parseMultipart(rawBody, type)) {
      if (part.filename === undefined) out[part.name] = tryJson(part.data.toString("utf8"));
      else
        out[part.name] = {
          upload: true,
          name: part.filename,
          type: part.type ?? "",
          data: part.data,
        } satisfies UploadedFile;
    }
    // `photo: "attach://<part>"` names the part that carries the file.
    for (const [k, v] of Object.entries(out))
      if (typeof v === "string" && v.startsWith("attach://")) out[k] = out[v.slice(9)];
    return out;
  }
  if (type.includes("json")) return { ...out, ...(JSON.parse(body) as Record<string, unknown>) };
  if (type.includes("x-www-form-urlencoded")) {
    for (const [k, v] of new URLSearchParams(body)) out[k] = tryJson(v);
  }
  return out;
}

function tryJson(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** A file part of a multipart upload. */
export interface UploadedFile {
  upload: true;
  name: string;
  type: string;
  data: Buffer;
}

/** Starts a fake server; `close()` it in afterEach. */
export async function startFakeTelegram(token?: string): Promise<FakeTelegramServer> {
  const s = new FakeTelegramServer(token);
  await s.start();
  return s;
}
