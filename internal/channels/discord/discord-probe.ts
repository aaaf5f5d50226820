/**
 * The Discord channel's health probe (the channel watchdog's question): a REST call the bot is
 * allowed to make (GET /users/@me) and its round trip. The websocket's own heartbeats are
 * discord.js's (a missed ACK makes it reconnect, which the watchdog sees as a state).
 */
import { Routes, type Client } from "discord.js";
import { performance } from "node:perf_hooks";
import type { ChannelProbe, ChannelStatus } from "../channel.js";

/** Probes REST with `client`; healthy only when REST answers and the gateway is connected. */
export async function probeDiscord(
  client: Client,
  st: Pick<ChannelStatus, "state" | "detail">,
): Promise<ChannelProbe> {
  const t0 = performance.now();
  try {
    await client.rest.get(Routes.user());
    const rttMs = Math.round(performance.now() - t0);
    const ok = st.state === "connected";
    return {
      ok,
      rttMs,
      detail: ok
        ? `GET /users/@me answered; gateway ping ${client.ws.ping} ms`
        : `REST answers but the gateway is ${st.state}${st.detail ? `: ${st.detail}` : ""}`,
    };
  } catch (err) {
    return {
      ok: false,
      rttMs: Math.round(performance.now() - t0),
      detail: `GET /users/@me failed: ${(err as Error).message}`,
    };
  }
}
