/**
 * The Telegram channel's health probe (the channel watchdog's question): `getWebhookInfo`'s round
 * trip and `pending_update_count`. Polling that hears nothing while Telegram reports pending updates
 * at two probes in a row is stuck (alive on the wire, deaf in effect).
 */
import type { Api } from "grammy";
import { performance } from "node:perf_hooks";
import type { ChannelProbe, ChannelStatus } from "../channel.js";
import { gs } from "./telegram-api.js";

/** What one probe remembers for the next: Telegram's pending count and the updates received so far. */
export interface ProbeMark {
  pending: number;
  received: number;
}

/** What the probe reads of the running channel (read after Telegram answered). */
export interface ProbeHost {
  status(): Pick<ChannelStatus, "state" | "detail">;
  /** Updates received by polling so far. */
  received(): number;
  /** The mark of the previous successful probe. */
  last(): ProbeMark | undefined;
}

/** Probes Telegram; `mark` (when Telegram answered) is what the next probe compares with. */
export async function probeTelegram(
  api: Api,
  h: ProbeHost,
): Promise<{ probe: ChannelProbe; mark?: ProbeMark }> {
  const t0 = performance.now();
  try {
    const info = await api.getWebhookInfo(gs(AbortSignal.timeout(15_000)));
    const rttMs = Math.round(performance.now() - t0);
    const pending = info.pending_update_count;
    const prev = h.last();
    const received = h.received();
    const polling = !info.url;
    const stuck =
      polling && pending > 0 && prev !== undefined && prev.pending > 0 && prev.received === received;
    const mark = { pending, received };
    const st = h.status();
    if (st.state !== "connected")
      return { probe: { ok: false, rttMs, detail: `${st.state}${st.detail ? `: ${st.detail}` : ""}` }, mark };
    return {
      probe: {
        ok: !stuck,
        rttMs,
        stuck,
        detail: stuck
          ? `Telegram holds ${pending} update(s) the poller has not received`
          : `getWebhookInfo answered; ${pending} update(s) pending`,
      },
      mark,
    };
  } catch (err) {
    return {
      probe: {
        ok: false,
        rttMs: Math.round(performance.now() - t0),
        detail: `getWebhookInfo failed: ${(err as Error).message}`,
      },
    };
  }
}
