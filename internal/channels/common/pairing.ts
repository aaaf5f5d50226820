/**
 * Access control for chat channels: the `dm_policy` decision and the pairing flow, shared by
 * Telegram, Discord and the gateway/CLI (`familiar pairing list|approve`).
 *
 * Policy:
 * - `open`: everyone; `disabled`: nobody (DMs ignored);
 * - `allowlist`: config `allow_from` plus users approved earlier (stored);
 * - `pairing` (default): as allowlist, and an unknown user gets a short code (and nothing else) that
 *   the owner approves with `familiar pairing approve <code>`.
 *
 * Codes: 8 characters from an alphabet without look-alikes (no 0/O, 1/I/L), valid for one hour.
 * At most {@link MAX_PENDING} codes are pending per channel; when full, a NEW user is refused (no code
 * is issued and the oldest requests are kept) so a flood of strangers cannot push the owner's own
 * pending request out. A user who already has a pending code gets the same code again.
 */
import { randomInt } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import type { Db } from "../../store/db.js";

export type DmPolicy = "pairing" | "allowlist" | "open" | "disabled";

/** Characters of pairing codes: upper-case letters and digits without 0, O, 1, I and L. */
export const PAIRING_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const PAIRING_CODE_LENGTH = 8;
export const PAIRING_TTL_MS = 60 * 60 * 1000;
export const MAX_PENDING = 3;

export interface PairingRequest {
  channel: string;
  code: string;
  userId: string;
  userName?: string;
  chatId?: string;
  createdAt: number;
  expiresAt: number;
}

export interface AllowedUser {
  channel: string;
  userId: string;
  userName?: string;
  approvedAt: number;
}

/** What to do with a DM from a user. */
export type AccessDecision =
  | { kind: "allow" }
  | { kind: "ignore"; reason: "disabled" | "not_allowed" }
  /** Pairing: reply with this code (new or the user's existing pending one). */
  | { kind: "pair"; code: string; expiresAt: number; fresh: boolean }
  /** Pairing: too many pending requests; tell the user to try later. */
  | { kind: "pair_full" };

interface ReqRow {
  channel: string;
  code: string;
  user_id: string;
  user_name: string | null;
  chat_id: string | null;
  created_at: number;
  expires_at: number;
}

/** Normalises a code typed by a human (case, spaces, dashes). */
export function normalizeCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, "");
}

export class PairingStore {
  private q;

  constructor(
    private db: Db,
    private clock: Clock,
  ) {
    this.q = {
      purge: db.prepare("DELETE FROM pairing_requests WHERE expires_at <= ?"),
      isAllowed: db.prepare<[string, string], { n: number }>(
        "SELECT 1 AS n FROM pairing_allowed WHERE channel = ? AND user_id = ?",
      ),
      pendingOf: db.prepare<[string, string], ReqRow>(
        "SELECT * FROM pairing_requests WHERE channel = ? AND user_id = ?",
      ),
      countPending: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM pairing_requests WHERE channel = ?",
      ),
      insertReq: db.prepare(
        `INSERT INTO pairing_requests (channel, code, user_id, user_name, chat_id, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      codeTaken: db.prepare<[string], { n: number }>("SELECT 1 AS n FROM pairing_requests WHERE code = ?"),
      byCode: db.prepare<[string], ReqRow>("SELECT * FROM pairing_requests WHERE code = ?"),
      byCodeChannel: db.prepare<[string, string], ReqRow>(
        "SELECT * FROM pairing_requests WHERE code = ? AND channel = ?",
      ),
      deleteReq: db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND code = ?"),
      allow: db.prepare(
        `INSERT INTO pairing_allowed (channel, user_id, user_name, approved_at, via_code) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(channel, user_id) DO UPDATE SET user_name = excluded.user_name, approved_at = excluded.approved_at`,
      ),
      revoke: db.prepare("DELETE FROM pairing_allowed WHERE channel = ? AND user_id = ?"),
      unwelcomed: db.prepare<[string], { user_id: string; approved_at: number }>(
        `SELECT user_id, approved_at FROM pairing_allowed
         WHERE channel = ? AND via_code IS NOT NULL AND welcomed_at IS NULL ORDER BY approved_at`,
      ),
      welcomed: db.prepare(
        "UPDATE pairing_allowed SET welcomed_at = ? WHERE channel = ? AND user_id = ? AND welcomed_at IS NULL",
      ),
      unwelcome: db.prepare(
        "UPDATE pairing_allowed SET welcomed_at = NULL WHERE channel = ? AND user_id = ?",
      ),
      listReq: db.prepare<[], ReqRow>("SELECT * FROM pairing_requests ORDER BY created_at"),
      listAllowed: db.prepare<
        [],
        { channel: string; user_id: string; user_name: string | null; approved_at: number }
      >("SELECT channel, user_id, user_name, approved_at FROM pairing_allowed ORDER BY approved_at"),
    };
  }

  /** True when the user may talk to the bot under `allow_from` plus stored approvals. */
  isAllowed(channel: string, userId: string, allowFrom: readonly (string | number)[]): boolean {
    if (allowFrom.some((a) => String(a) === userId)) return true;
    return this.q.isAllowed.get(channel, userId) !== undefined;
  }

  /**
   * Decides what to do with a DM. Under `pairing` an unknown user gets a code (a pending request is
   * stored); calling again returns the same code until it expires.
   */
  check(
    channel: string,
    policy: DmPolicy,
    allowFrom: readonly (string | number)[],
    user: { id: string; name?: string; chatId?: string },
  ): AccessDecision {
    if (policy === "disabled") return { kind: "ignore", reason: "disabled" };
    if (policy === "open") return { kind: "allow" };
    if (this.isAllowed(channel, user.id, allowFrom)) return { kind: "allow" };
    if (policy === "allowlist") return { kind: "ignore", reason: "not_allowed" };
    return this.requestCode(channel, user);
  }

  /** Issues (or returns the pending) pairing code for a user. */
  requestCode(channel: string, user: { id: string; name?: string; chatId?: string }): AccessDecision {
    const now = this.clock.now();
    const run = this.db.transaction((): AccessDecision => {
      this.q.purge.run(now);
      const existing = this.q.pendingOf.get(channel, user.id);
      if (existing)
        return { kind: "pair", code: existing.code, expiresAt: existing.expires_at, fresh: false };
      if ((this.q.countPending.get(channel)?.n ?? 0) >= MAX_PENDING) return { kind: "pair_full" };
      let code = newCode();
      while (this.q.codeTaken.get(code)) code = newCode();
      const expiresAt = now + PAIRING_TTL_MS;
      this.q.insertReq.run(channel, code, user.id, user.name ?? null, user.chatId ?? null, now, expiresAt);
      return { kind: "pair", code, expiresAt, fresh: true };
    });
    return run();
  }

  /**
   * Approves a pending code: the user joins the stored allow list and the request is removed.
   * Returns the approved request, or undefined when the code is unknown or expired.
   */
  approve(code: string, channel?: string): PairingRequest | undefined {
    const now = this.clock.now();
    const c = normalizeCode(code);
    const run = this.db.transaction((): PairingRequest | undefined => {
      this.q.purge.run(now);
      const row = channel ? this.q.byCodeChannel.get(c, channel) : this.q.byCode.get(c);
      if (!row) return undefined;
      this.q.allow.run(row.channel, row.user_id, row.user_name, now, row.code);
      this.q.deleteReq.run(row.channel, row.code);
      return toReq(row);
    });
    return run();
  }

  /**
   * Users of `channel` approved by a pairing code (`familiar pairing approve`, the console) who were
   * not yet told they can talk to the assistant; users added any other way (config, import) are not
   * listed. Oldest first.
   */
  unwelcomed(channel: string): { userId: string; approvedAt: number }[] {
    return this.q.unwelcomed.all(channel).map((r) => ({ userId: r.user_id, approvedAt: r.approved_at }));
  }

  /**
   * Claims telling `userId` (before the message goes out); false when someone already claimed it, so
   * the user is told at most once.
   */
  markWelcomed(channel: string, userId: string): boolean {
    return this.q.welcomed.run(this.clock.now(), channel, userId).changes > 0;
  }

  /** Gives a claim back after the message could not be sent (the next sweep tries again). */
  unmarkWelcomed(channel: string, userId: string): void {
    this.q.unwelcome.run(channel, userId);
  }

  /** Adds a user to the stored allow list directly. */
  allow(channel: string, userId: string, userName?: string): void {
    this.q.allow.run(channel, userId, userName ?? null, this.clock.now(), null);
  }

  /** Removes a user from the stored allow list. Returns true when they were on it. */
  revoke(channel: string, userId: string): boolean {
    return this.q.revoke.run(channel, userId).changes > 0;
  }

  /** Pending (unexpired) requests, oldest first; optionally of one channel. */
  pending(channel?: string): PairingRequest[] {
    this.q.purge.run(this.clock.now());
    return this.q.listReq
      .all()
      .filter((r) => !channel || r.channel === channel)
      .map(toReq);
  }

  /** Stored approvals (config `allow_from` is not included); optionally of one channel. */
  allowed(channel?: string): AllowedUser[] {
    return this.q.listAllowed
      .all()
      .filter((r) => !channel || r.channel === channel)
      .map((r) => ({
        channel: r.channel,
        userId: r.user_id,
        ...(r.user_name ? { userName: r.user_name } : {}),
        approvedAt: r.approved_at,
      }));
  }
}

function toReq(r: ReqRow): PairingRequest {
  return {
    channel: r.channel,
    code: r.code,
    userId: r.user_id,
    ...(r.user_name ? { userName: r.user_name } : {}),
    ...(r.chat_id ? { chatId: r.chat_id } : {}),
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

function newCode(): string {
  let s = "";
  for (let i = 0; i < PAIRING_CODE_LENGTH; i++) s += PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)];
  return s;
}

/** The reply an unknown user gets under pairing. */
export function pairingReply(
  d: Extract<AccessDecision, { kind: "pair" | "pair_full" }>,
  userId: string,
): string {
  if (d.kind === "pair_full")
    return "This assistant is private. Too many pairing requests are pending right now; please try again later.";
  return [
    "This assistant is private. To get access, ask its owner to run:",
    "",
    `familiar pairing approve ${d.code}`,
    "",
    `Your user id: ${userId}. The code expires in 1 hour.`,
  ].join("\n");
}
