/**
 * Text about a failure as anyone but the owner's logs may see it: the owner's infrastructure (a
 * provider's base URL, host, address and port) is replaced by neutral words. Used where a failed
 * turn's cause is stored (the transcript, which API clients can read back), where a turn's error is
 * answered (`/v1`, `/api`, the websocket; issue 34) and where a failed subagent task is handed to the
 * model (issue 46 item 6). The owner's log keeps the original.
 *
 * What is replaced: URLs; the address after a socket error code (`connect ECONNREFUSED
 * 127.0.0.1:41809`, `getaddrinfo ENOTFOUND gpu-box.corp.invalid`); IP literals with or without a
 * port; `host:port` for a dotted host name or `localhost`; and the host in the daemon's own hints
 * ("connection refused by X", "host X not found", "X closed the connection").
 */

const PROVIDER = "(the model provider)";

const URL_RE = /\b(?:https?|wss?):\/\/[^\s,;)'"]+/g;
/** A socket error code (Node's `E...`, getaddrinfo's `EAI_...`, undici's `UND_ERR_...`) and what follows it. */
const CODE_THEN_ADDRESS =
  /\b(E[A-Z]{3,}|EAI_[A-Z]+|UND_ERR_[A-Z_]+)[ \t]+(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::\d{1,5})?/g;
const BRACKETED_V6 = /\[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\](?::\d{1,5})?/g;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b/g;
const HOST_PORT = /\b(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):\d{1,5}\b/g;
const HINT_REFUSED = /\brefused by [^\s();,]+?(?=[:;,]?(?:\s|$))/g;
const HINT_NOT_FOUND = /\bhost [^\s()]+ not found\b/g;
const HINT_CLOSED = /(^|[\s:;(])[^\s()]+ closed the connection\b/g;

/** The message with URLs replaced by a neutral word. */
function withoutUrls(message: string): string {
  return message.replace(URL_RE, PROVIDER);
}

/** The message with URLs, host names, addresses and ports of the owner's machines removed. */
export function withoutAddresses(message: string): string {
  return withoutUrls(message)
    .replace(HINT_REFUSED, `refused by ${PROVIDER}`)
    .replace(HINT_NOT_FOUND, "host not found")
    .replace(HINT_CLOSED, `$1${PROVIDER} closed the connection`)
    .replace(CODE_THEN_ADDRESS, "$1")
    .replace(BRACKETED_V6, PROVIDER)
    .replace(IPV4, PROVIDER)
    .replace(HOST_PORT, PROVIDER);
}
