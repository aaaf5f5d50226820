/**
 * SSRF guard: which IP addresses web_fetch may connect to.
 *
 * Refused by default: loopback, "this network", private (RFC 1918), CGNAT (100.64/10), link-local
 * (169.254/16, fe80::/10), unique-local (fc00::/7), multicast, reserved and broadcast ranges, and the
 * same ranges embedded in any IPv6 form that reaches an IPv4 host (IPv4-compatible, -mapped and
 * -translated, NAT64, 6to4, Teredo: see {@link embeddedIPv4}). The check runs on the address actually
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
  // The discard-only block, and the NAT64 local-use prefix whose mapping the network decides.
  ["100::", 64],
  ["64:ff9b:1::", 48],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a dotted IPv4 tail converted). */
export function ipv6Groups(addr: string): number[] | undefined {
  let a = addr.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted?.[1]) {
    if (isIP(dotted[1]) !== 4) return undefined;
    const [p, q, r, t] = dotted[1].split(".").map(Number) as [number, number, number, number];
    a = `${a.slice(0, dotted.index)}${((p << 8) | q).toString(16)}:${((r << 8) | t).toString(16)}`;
  }
  const halves = a.split("::");
  if (halves.length > 2) return undefined;
  const part = (h: string | undefined): string[] => (h ? h.split(":") : []);
  const head = part(halves[0]);
  const tail = part(halves[1]);
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== 8)) return undefined;
  const groups = [...head, ...Array<string>(fill).fill("0"), ...tail].map((g) =>
    /^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN,
  );
  return groups.length === 8 && groups.every((g) => !Number.isNaN(g)) ? groups : undefined;
}

const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * Every IPv4 address an IPv6 address carries, by the ways a packet to it can end up at that IPv4
 * host: IPv4-compatible `::a.b.c.d` (::/96), IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d` (RFC 2765), NAT64 `64:ff9b::/96` and the local-use `64:ff9b:1::/48` (RFC 8215),
 * 6to4 `2002:AABB:CCDD::/16`, and Teredo `2001:0::/32` (server in groups 2-3, client inverted in 6-7).
 */
export function embeddedIPv4(addr: string): string[] {
  const g = ipv6Groups(addr);
  if (!g) return [];
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const out: string[] = [];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) {
    if (g4 === 0 && (g5 === 0 || g5 === 0xffff)) out.push(v4(g6, g7));
    if (g4 === 0xffff && g5 === 0) out.push(v4(g6, g7));
  }
  if (g0 === 0x64 && g1 === 0xff9b && (g2 === 0 || g2 === 1)) out.push(v4(g6, g7));
  if (g0 === 0x2002) out.push(v4(g1, g2));
  if (g0 === 0x2001 && g1 === 0) out.push(v4(g2, g3), v4(g6 ^ 0xffff, g7 ^ 0xffff));
  return out;
}

/** True when the address is in a range web_fetch refuses by default. */
export function isPrivateAddress(addr: string): boolean {
  const clean = addr.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const fam = isIP(clean);
  if (fam === 4) return blocked.check(clean, "ipv4");
  if (fam === 6) {
    if (embeddedIPv4(clean).some((a) => blocked.check(a, "ipv4"))) return true;
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
