/**
 * The one egress policy for `web_fetch` and the sandbox's network proxy: an untainted session may
 * reach hosts in `containment.egress.allow_domains`; unknown hosts are refused; a tainted session
 * asks the owner for every host it has not been granted.
 */

/** True when `host` matches a pattern: `*`, `example.com` (exactly) or `*.example.com` (it and below). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/\.$/, "")
    .replace(/^\[|\]$/g, "");
  return patterns.some((p) => {
    const q = p.toLowerCase();
    if (q === "*") return true;
    if (q.startsWith("*.")) return h === q.slice(2) || h.endsWith(q.slice(1));
    return h === q;
  });
}

/** What to do with a connection to a host. */
export type EgressVerdict = "allow" | "ask" | "refuse";

/** The verdict before grants: tainted sessions ask, untainted ones follow the allowlist. */
export function egressVerdict(
  host: string,
  tainted: boolean,
  allowDomains: readonly string[],
): EgressVerdict {
  if (tainted) return "ask";
  return hostMatches(host, allowDomains) ? "allow" : "refuse";
}
