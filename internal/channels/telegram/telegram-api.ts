/**
 * The grammY `Api` as the Telegram channel runs it (telegram-channel.ts): which calls are retried on
 * a 429 and for how long, and which answers count as signs of life or as a message out.
 */
import { Api, HttpError, type Transformer } from "grammy";
import { autoRetry } from "@grammyjs/auto-retry";

/** Telegram's Bot API root when `channels.telegram.api_root` is not set. */
export const DEFAULT_API_ROOT = "https://api.telegram.org";

/** grammY types its signals with the `abort-controller` polyfill's type; Node's is compatible. */
export type GrammySignal = Parameters<Api["getMe"]>[0];

/** Node's AbortSignal as grammY's parameter type. */
export const gs = (s: AbortSignal): GrammySignal => s as unknown as GrammySignal;

/** Longest 429 `retry_after` waited out before a call fails (seconds); see `TelegramDeps`. */
export interface RetryLimits {
  sendMaxDelayS?: number;
  otherMaxDelayS?: number;
}

/** What the channel learns from each successful answer (the watchdog's liveness marks). */
export interface ApiLiveness {
  /** A message was sent or edited: the channel's last message out. */
  sent(): void;
  /** Any other answer: Telegram is alive. */
  heard(): void;
}

/**
 * Calls whose repetition changes nothing the first one did not (an edit to the same text, a delete,
 * a callback answer, a typing action, reads): retried, twice at most, when the request failed on
 * the network.
 * A send is never among them: Telegram may have taken the first one, and a message must not arrive
 * twice. Why: a server closes an idle keep-alive connection (Node's default after 5 s) just as the
 * client reuses it; the call fails with a network error although nothing is wrong, and an approval
 * question's closing edit was lost that way, leaving its buttons live.
 */
export const RETRIED_ON_NETWORK_ERROR: ReadonlySet<string> = new Set([
  "editMessageText",
  "editMessageReplyMarkup",
  "deleteMessage",
  "answerCallbackQuery",
  "sendChatAction",
  "getMe",
  "getFile",
  "setMyCommands",
  "deleteWebhook",
]);

/** Pauses before the retries of a {@link RETRIED_ON_NETWORK_ERROR} call (two retries at most). */
const NETWORK_RETRY_PAUSES_MS = [200, 1000];

/** An Api for `token` at `apiRoot` with the channel's retry policy and liveness hooks installed. */
export function createTelegramApi(
  token: string,
  apiRoot: string,
  limits: RetryLimits,
  live: ApiLiveness,
): Api {
  const api = new Api(token, { apiRoot });
  const sendRetry = autoRetry({
    maxRetryAttempts: 5,
    maxDelaySeconds: limits.sendMaxDelayS ?? 600,
    rethrowHttpErrors: true,
  });
  const retry = autoRetry({
    maxRetryAttempts: 5,
    maxDelaySeconds: limits.otherMaxDelayS ?? 60,
    rethrowHttpErrors: true,
  });
  // getUpdates is retried by the poll loop itself (with stall detection), not by auto-retry.
  // Every answer from Telegram is a sign of life (the watchdog reads it); a sent or edited message
  // is also the channel's last message out.
  const transformer: Transformer = async (prev, method, payload, signal) => {
    const call = () =>
      method === "getUpdates"
        ? prev(method, payload, signal)
        : method === "sendMessage"
          ? sendRetry(prev, method, payload, signal)
          : retry(prev, method, payload, signal);
    let res: Awaited<ReturnType<typeof call>> | undefined;
    for (let attempt = 0; res === undefined; attempt++) {
      try {
        res = await call();
      } catch (err) {
        const again =
          err instanceof HttpError &&
          RETRIED_ON_NETWORK_ERROR.has(method) &&
          attempt < NETWORK_RETRY_PAUSES_MS.length &&
          !signal?.aborted;
        if (!again) throw err;
        // A pause first: a retry sent at once can meet the next connection the server is closing.
        await new Promise((r) => setTimeout(r, NETWORK_RETRY_PAUSES_MS[attempt]));
      }
    }
    if (res.ok) {
      if (/^(send|edit)/.test(method) && method !== "sendChatAction") live.sent();
      else live.heard();
    }
    return res;
  };
  api.config.use(transformer);
  return api;
}
