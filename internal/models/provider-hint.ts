/**
 * Words for provider failures, shared by the router's errors (what the user and the log see) and
 * `familiar doctor`: which provider, which URL (never its secrets) and the likely fix, once.
 */

/** `base_url` without user info, query or fragment (where keys sometimes hide). */
export function safeUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return u.href.replace(/\/$/, "");
  } catch {
    return "(an invalid URL)";
  }
}

/**
 * Removes what can carry secrets from every URL in `text` (user info, query string): SDK and fetch
 * messages quote the request URL as given, and a key may sit in base_url's query.
 */
export function scrubUrls(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, "$1")
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#]*)\?[^\s#]*/gi, "$1?...");
}

/** Drops trailing full stops so a message can be followed by more words without "..". */
export function clause(text: string): string {
  return text.trim().replace(/[.\s]+$/, "");
}

/**
 * The likely fix for a network failure reaching `url`: `codes` and `message` come from the error's
 * cause chain (undici puts the socket error two causes deep).
 */
export function networkFix(
  provider: string,
  url: string | undefined,
  codes: string[],
  message: string,
): string {
  const key = `models.providers.${provider}.base_url`;
  let port = "";
  let host = url ?? "";
  try {
    const u = new URL(url ?? "");
    host = u.host;
    port = u.port || (u.protocol === "https:" ? "443" : "80");
  } catch {
    /* keep the raw text */
  }
  if (/bad port/i.test(message))
    return `port ${port} is one that fetch refuses to connect to (a "bad port"); serve the provider on another port and update ${key}`;
  if (codes.includes("ECONNREFUSED"))
    return `connection refused by ${host}: is the server running? Check ${key}`;
  if (codes.includes("ENOTFOUND") || codes.includes("EAI_AGAIN"))
    return `host ${host.replace(/:\d+$/, "")} not found: check ${key} and the network`;
  if (codes.includes("ECONNRESET") || codes.includes("UND_ERR_SOCKET"))
    return `${host} closed the connection: check that ${key} points at an OpenAI-compatible API (http vs https)`;
  return `check ${key} and the network`;
}
