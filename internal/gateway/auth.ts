/**
 * Gateway authentication: one shared token, compared in constant time, with per-address rate limiting
 * of failures. There is always a token: `gateway.token` when the config sets one, else the token the
 * daemon generated in `<data_dir>/gateway-token` (see token-store.ts). A reload that removes
 * `gateway.token` therefore falls back to the generated token; it never opens the gateway.
 *
 * Invariants:
 * - comparison hashes both sides first, so neither length nor content leaks through timing;
 * - an address over `gateway.rate_limit.max_failures` failures inside `window_s` is refused with 429
 *   (and `Retry-After`) until the window passes, even with the right token, so guessing stays slow;
 * - the failure table is bounded (oldest addresses are dropped first).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { HttpError } from "./http-util.js";

const MAX_TRACKED = 10_000;

/** True for bind addresses only this machine can reach. */
export function isLoopbackBind(bind: string): boolean {
  return ["127.0.0.1", "::1", "localhost"].includes(bind) || bind.startsWith("127.");
}

/** Constant-time string equality (sha256 of both sides, then timingSafeEqual). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** Checks `sha256=<hex>` against the HMAC-SHA256 of `body` with `secret`, in constant time. */
export function verifyHmacSignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header) return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m?.[1]) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(m[1], "hex"));
}

interface FailureEntry {
  count: number;
  windowStart: number;
}

export type AuthOutcome = { ok: true } | { ok: false; error: HttpError };

/** Token check plus failure rate limiting. Reads config on every call (hot reload). */
export class GatewayAuth {
  private failures = new Map<string, FailureEntry>();

  /**
   * @param generatedToken the data dir's generated token, used whenever `gateway.token` is unset.
   */
  constructor(
    private config: () => Config,
    private clock: Clock,
    private generatedToken: string,
  ) {}

  /** The token requests must present now (`gateway.token` wins over the generated one). */
  token(): string {
    return this.config().gateway.token || this.generatedToken;
  }

  /** Where the live token comes from, for health and the start-up log. */
  source(): "config" | "generated" {
    return this.config().gateway.token ? "config" : "generated";
  }

  /** A 429 HttpError when `addr` is currently limited, else undefined. */
  limited(addr: string): HttpError | undefined {
    const e = this.failures.get(addr);
    if (!e) return undefined;
    const { max_failures, window_s } = this.config().gateway.rate_limit;
    const now = this.clock.now();
    const windowMs = window_s * 1000;
    if (now - e.windowStart >= windowMs) {
      this.failures.delete(addr);
      return undefined;
    }
    if (e.count < max_failures) return undefined;
    const retry = Math.max(1, Math.ceil((e.windowStart + windowMs - now) / 1000));
    return new HttpError(
      429,
      "rate_limited",
      `too many failed authentication attempts from ${addr}; retry in ${retry} s`,
      { "retry-after": String(retry) },
    );
  }

  /** Records one failed attempt from `addr`. */
  recordFailure(addr: string): void {
    const now = this.clock.now();
    const windowMs = this.config().gateway.rate_limit.window_s * 1000;
    const e = this.failures.get(addr);
    if (!e || now - e.windowStart >= windowMs) {
      this.failures.delete(addr);
      if (this.failures.size >= MAX_TRACKED) {
        const oldest = this.failures.keys().next().value;
        if (oldest !== undefined) this.failures.delete(oldest);
      }
      this.failures.set(addr, { count: 1, windowStart: now });
    } else e.count++;
  }

  /**
   * Checks a presented token for `addr`. Order: rate limit first (a limited address learns nothing),
   * then the token. A wrong or missing token counts as a failure.
   */
  check(addr: string, presented: string | undefined): AuthOutcome {
    const limited = this.limited(addr);
    if (limited) return { ok: false, error: limited };
    const token = this.token();
    if (presented !== undefined && safeEqual(presented, token)) return { ok: true };
    this.recordFailure(addr);
    return {
      ok: false,
      error: new HttpError(
        401,
        presented === undefined ? "unauthorized" : "invalid_token",
        presented === undefined
          ? "missing gateway token: send Authorization: Bearer <token> (gateway.token, or the generated <data_dir>/gateway-token; `familiar dashboard` prints a login link)"
          : "invalid gateway token",
        { "www-authenticate": 'Bearer realm="familiar"' },
      ),
    };
  }
}
