/**
 * SSRF guard: which IP addresses web_fetch may connect to.
 *
 * Refused by default: loopback, "this network", private (RFC 1918), CGNAT (100.64/10), link-local
 * (169.254/16, fe80::/10), unique-local (fc00::/7), multicast, reserved and broadcast ranges, and the
 * same ranges embedded in IPv4-mapped / NAT64 IPv6 addresses. The check runs on the address actually
 * connected to (after DNS), so a public name resolving to 10.0.0.1 is refused too.
 */
import { BlockList, isIP } from "node:net";

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  blocked.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  ["2001:db8::", 32],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");

/** Extracts an IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::) address. */
function embeddedV4(addr: string): string | undefined {
  const lower = addr.toLowerCase();
  const m = /^(?:::ffff:|64:ff9b::)(?:0:)?([0-9.]+)$/.exec(lower);
  if (m?.[1] && isIP(m[1]) === 4) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) {
    const a = parseInt(hex[1], 16);
    const b = parseInt(hex[2], 16);
    return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  return undefined;
}

/** True when the address is in a range web_fetch refuses by default. */
export function isPrivateAddress(addr: string): boolean {
  const clean = addr.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const fam = isIP(clean);
  if (fam === 4) return blocked.check(clean, "ipv4");
  if (fam === 6) {
    const v4 = embeddedV4(clean);
    if (v4) return blocked.check(v4, "ipv4");
    return blocked.check(clean, "ipv6");
  }
  return true; // not an IP at all: refuse rather than guess
}

/** True when `host` matches an `allow_hosts` entry (`example.com`, `*.example.com`, or an IP). */
export function hostAllowed(host: string, allowHosts: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return allowHosts.some((e) => {
    const p = e.toLowerCase().trim();
    if (p.startsWith("*.")) return h.endsWith(p.slice(1)) || h === p.slice(2);
    return h === p;
  });
}
