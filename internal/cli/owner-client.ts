/**
 * The CLI's way to the running daemon: find it (gateway.json, then flags, env and config.yaml; see
 * gateway/target.ts) and connect with the owner role, as every owner command does.
 */
import { GatewayClient } from "../gateway/client.js";
import { resolveGatewayTarget } from "../gateway/target.js";

/** Connects to the running daemon as the owner; rejects with a GatewayClientError. */
export function connectAsOwner(
  opts: { config: string; url?: string | undefined; token?: string | undefined },
  clientName: string,
): Promise<GatewayClient> {
  const target = resolveGatewayTarget(opts);
  return GatewayClient.connect({ url: target.url, token: target.token, clientName, role: "owner" });
}
