/**
 * Hot reload never widens the gateway's door silently: what a reload changed about who may reach the
 * gateway, in words for a warn log line. The token is never printed, only that it changed.
 */
import type { Config } from "../config/schema.js";

type Gw = Config["gateway"];

/** Changes from `prev` to `next` that let more clients in (empty when the door did not widen). */
export function doorWidening(prev: Gw, next: Gw): string[] {
  const out: string[] = [];
  if (prev.token && !next.token)
    out.push("gateway.token removed (the generated token in <data_dir>/gateway-token applies now)");
  else if (prev.token && next.token && prev.token !== next.token) out.push("gateway.token changed");
  else if (!prev.token && next.token) out.push("gateway.token set (replaces the generated token)");
  // bind and port need a restart; the restart-keys warning covers them, but say it here too.
  if (prev.bind !== next.bind) out.push(`gateway.bind ${prev.bind} -> ${next.bind} (applies at restart)`);
  const addedOrigins = next.allowed_origins.filter((o) => !prev.allowed_origins.includes(o));
  if (addedOrigins.length) out.push(`gateway.allowed_origins added ${addedOrigins.join(", ")}`);
  const addedHosts = next.allowed_hosts.filter((h) => !prev.allowed_hosts.includes(h));
  if (addedHosts.length) out.push(`gateway.allowed_hosts added ${addedHosts.join(", ")}`);
  if (next.rate_limit.max_failures > prev.rate_limit.max_failures)
    out.push(
      `gateway.rate_limit.max_failures ${prev.rate_limit.max_failures} -> ${next.rate_limit.max_failures}`,
    );
  if (next.allow_channel_writes && !prev.allow_channel_writes)
    out.push("gateway.allow_channel_writes enabled");
  return out;
}
