/**
 * Test helper: the real daemon (`familiar run`, see daemon.ts) on the fake model and the fake
 * Telegram Bot API, started and waited for until its Telegram channel is connected. The suites that
 * drive a whole daemon through Telegram share this instead of each copying the config and the wait.
 */
import type { FakeOpenAI } from "../fakes/openai-server.js";
import type { FakeTelegramServer } from "../fakes/telegram-server.js";
import { startDaemonProcess, type DaemonProcess } from "./daemon.js";

/** What differs between the suites: the Telegram channel's settings and the rest of the config. */
export interface TelegramDaemonOptions {
  /** Merged into `channels.telegram` (after `enabled`, the fake's token and root, `dm_policy`). */
  telegram?: Record<string, unknown>;
  /** More top-level config keys (`agents`, `tools`, ...). */
  config?: Record<string, unknown>;
}

/** The config of a daemon whose model is `llm` (`fake/m`, no retries) and whose Telegram is `tg`. */
export function telegramDaemonConfig(
  llm: FakeOpenAI,
  tg: FakeTelegramServer,
  o: TelegramDaemonOptions = {},
): Record<string, unknown> {
  return {
    models: {
      providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
      primary: "fake/m",
      max_retries: 0,
    },
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "allowlist",
        ...o.telegram,
      },
    },
    ...o.config,
  };
}

/** Polls `/healthz` until the daemon's Telegram channel says `connected` (throws after ~30 s). */
export async function waitTelegramConnected(d: DaemonProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const h = (await (await fetch(`${d.url}/healthz`)).json()) as {
      channels: Record<string, { state: string }>;
    };
    if (h.channels.telegram?.state === "connected") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("telegram never connected");
}

/** Starts the daemon on the fakes and returns it once Telegram is connected. */
export async function startTelegramDaemon(
  llm: FakeOpenAI,
  tg: FakeTelegramServer,
  o: TelegramDaemonOptions = {},
): Promise<DaemonProcess> {
  const d = await startDaemonProcess({ config: telegramDaemonConfig(llm, tg, o), timeoutMs: 60_000 });
  await waitTelegramConnected(d);
  return d;
}
