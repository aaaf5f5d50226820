/**
 * Gateway authentication: one shared token, compared in constant time, with a failure limiter that
 * slows guessing. There is always a token: `gateway.token` when the config sets one, else the token the
 * daemon generated in `<data_dir>/gateway-token` (see token-store.ts). A reload that removes
 * `gateway.token` therefore falls back to the generated token; it never opens the gateway.
 *
 * Invariants (docs/security.md, "Gateway and parsers under abuse"):
 * - comparison hashes both sides first, so neither length nor content leaks through timing;
 * - a request that carries no credential is answered 401 and is not a guess: it never counts, so a web
 *   page's `<img>` tags (or any local user) cannot lock anyone out;
 * - a correct token is never refused by the limiter. Guessing is slowed by making the guesser WAIT, not
 *   by refusing: after `max_failures` wrong tokens inside `window_s`, every later token from that source
 *   is checked only in its turn, one per `window_s / max_failures` (a correct one too: it is delayed, never
 *   answered 429, because it cannot be told from a guess before it is checked);
 * - a global bound: once all sources together failed `GLOBAL_FACTOR * max_failures` times in a window,
 *   every source that has failed in the window also queues on one shared lane, so spreading guesses over
 *   many addresses gains nothing after their first guess each. A source that has not failed never waits;
 * - memory is bounded: the failure table keeps `MAX_TRACKED` sources (oldest dropped first) and at most
 *   `MAX_WAITING_PER_SOURCE` / `MAX_WAITING` requests wait; beyond that the source is answered 429 at
 *   once, without its token being checked (only a source that is itself flooding guesses gets there).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { HttpError } from "./http-util.js";

const MAX_TRACKED = 10_000;
/** Requests one source may have waiting for their turn; more are answered 429 unchecked. */
export const MAX_WAITING_PER_SOURCE = 16;
/** Requests all sources together may have waiting. */
export const MAX_WAITING = 512;
/** The global lane opens after this many times `max_failures` failures in a window, over all sources. */
export const GLOBAL_FACTOR = 10;

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

/** A queue of turns: the next free turn and how many requests wait for one. */
interface Lane {
  next: number;
  waiting: number;
}

export type AuthOutcome = { ok: true } | { ok: false; error: HttpError };

/** Token check plus the failure limiter. Reads config on every call (hot reload). */
export class GatewayAuth {
  private failures = new Map<string, FailureEntry>();
  private lanes = new Map<string, Lane>();
  private global: Lane = { next: 0, waiting: 0 };
  private globalFailures: FailureEntry = { count: 0, windowStart: 0 };

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

  /** True when `presented` is the live token (constant time). Counts nothing: for re-checks of a live connection. */
  isCurrent(presented: string | undefined): boolean {
    return presented !== undefined && safeEqual(presented, this.token());
  }

  /** Failures of `addr` in its current window (0 when none or the window passed). */
  private failuresOf(addr: string): number {
    const e = this.failures.get(addr);
    if (!e) return 0;
    if (this.clock.now() - e.windowStart >= this.windowMs()) {
      this.failures.delete(addr);
      return 0;
    }
    return e.count;
  }

  private windowMs(): number {
    return this.config().gateway.rate_limit.window_s * 1000;
  }

  private globalCount(): number {
    if (this.clock.now() - this.globalFailures.windowStart >= this.windowMs()) return 0;
    return this.globalFailures.count;
  }

  /**
   * True when a token from `addr` must wait for a turn before it is checked: the source used up its
   * free failures, or the global bound is reached and the source has failed in this window.
   */
  slowed(addr: string): boolean {
    const own = this.failuresOf(addr);
    const max = this.config().gateway.rate_limit.max_failures;
    return own >= max || (own > 0 && this.globalCount() >= GLOBAL_FACTOR * max);
  }

  /** How many requests wait for their turn now (all sources). */
  waiting(): number {
    return this.global.waiting;
  }

  /** Records one wrong credential from `addr` (also for hook secrets and signatures). */
  recordFailure(addr: string): void {
    const now = this.clock.now();
    const windowMs = this.windowMs();
    if (now - this.globalFailures.windowStart >= windowMs)
      this.globalFailures = { count: 0, windowStart: now };
    this.globalFailures.count++;
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
   * Waits for `addr`'s turn when it is slowed; resolves at once otherwise. Rejects (resolves to a 429)
   * only when too many requests already wait, which takes a source flooding wrong tokens.
   */
  async turn(addr: string): Promise<HttpError | undefined> {
    if (!this.slowed(addr)) return undefined;
    const { max_failures } = this.config().gateway.rate_limit;
    const spacing = Math.ceil(this.windowMs() / max_failures);
    let lane = this.lanes.get(addr);
    const useGlobal = this.globalCount() >= GLOBAL_FACTOR * max_failures;
    if ((lane?.waiting ?? 0) >= MAX_WAITING_PER_SOURCE || this.global.waiting >= MAX_WAITING) {
      const retry = Math.max(1, Math.ceil(spacing / 1000));
      return new HttpError(
        429,
        "rate_limited",
        `too many authentication attempts waiting from ${addr}; retry in ${retry} s`,
        { "retry-after": String(retry) },
      );
    }
    if (!lane) {
      if (this.lanes.size >= MAX_TRACKED) {
        for (const [k, l] of this.lanes) if (l.waiting === 0) this.lanes.delete(k);
      }
      lane = { next: this.clock.now() + spacing, waiting: 0 };
      this.lanes.set(addr, lane);
    }
    const now = this.clock.now();
    let at = Math.max(now, lane.next);
    if (useGlobal) at = Math.max(at, this.global.next);
    lane.next = at + spacing;
    if (useGlobal) this.global.next = at + Math.ceil(this.windowMs() / (GLOBAL_FACTOR * max_failures));
    lane.waiting++;
    this.global.waiting++;
    try {
      if (at > now) await new Promise<void>((r) => this.clock.setTimeout(r, at - now));
    } finally {
      lane.waiting--;
      this.global.waiting--;
      if (lane.waiting === 0 && lane.next <= this.clock.now()) this.lanes.delete(addr);
    }
    return undefined;
  }

  /**
   * Checks a presented token for `addr`. A request without one is answered 401 and not counted. A
   * slowed source waits for its turn (see {@link turn}); then the token is checked, and a wrong one
   * counts as a failure. A correct token is never answered 429.
   */
  async check(addr: string, presented: string | undefined): Promise<AuthOutcome> {
    if (presented === undefined)
      return {
        ok: false,
        error: new HttpError(
          401,
          "unauthorized",
          "missing gateway token: send Authorization: Bearer <token> (gateway.token, or the generated <data_dir>/gateway-token; `familiar dashboard` prints a login link)",
          { "www-authenticate": 'Bearer realm="familiar"' },
        ),
      };
    const busy = await this.turn(addr);
    if (busy) return { ok: false, error: busy };
    if (this.isCurrent(presented)) return { ok: true };
    this.recordFailure(addr);
    return {
      ok: false,
      error: new HttpError(401, "invalid_token", "invalid gateway token", {
        "www-authenticate": 'Bearer realm="familiar"',
      }),
    };
  }
}
