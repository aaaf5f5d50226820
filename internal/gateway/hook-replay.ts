/**
 * Replay protection for `POST /hooks/<name>`: each accepted delivery leaves a mark in the core `kv`
 * table (`gw_hook:` rows) for the hook's `replay_window`, and a request that matches a mark is not run
 * again. Two marks exist:
 * - the delivery id the sender names (`X-GitHub-Delivery`, `X-Familiar-Delivery`): a sender's retry of a
 *   delivery that was accepted;
 * - for a signed hook, the digest of the signed body. The delivery id header is not signed (GitHub signs
 *   only the body), so a thief could change it; the body is what the signature vouches for, so a
 *   captured signed body runs once whatever headers come with it.
 *
 * Invariant: the check and the mark happen in one synchronous step (SQLite, one thread), so two copies
 * sent at the same moment still run once; a mark is removed again when the delivery was not admitted
 * (the host was down), so a retry after that runs.
 */
import { createHash } from "node:crypto";
import type { Db } from "../store/db.js";
import { HttpError } from "./http-util.js";

const PREFIX = "gw_hook:";
/** Delivery ids longer than this are refused (GitHub's are 36-character GUIDs). */
const MAX_DELIVERY_ID = 200;

/** The delivery id a request names, or undefined. Throws 400 when it is unusable. */
export function deliveryIdOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers["x-github-delivery"] ?? headers["x-familiar-delivery"];
  if (raw === undefined) return undefined;
  const id = Array.isArray(raw) ? raw[0] : raw;
  if (!id || id.length > MAX_DELIVERY_ID || !/^[\x21-\x7e]+$/.test(id))
    throw new HttpError(
      400,
      "invalid_delivery_id",
      `X-GitHub-Delivery / X-Familiar-Delivery: expected 1-${MAX_DELIVERY_ID} printable ASCII characters, got ${JSON.stringify(String(id).slice(0, 40))}`,
    );
  return id;
}

export interface DeliveryMarks {
  /** The kv keys this delivery marked; hand them to `release` when it was not admitted. */
  keys: string[];
}

/** The kv-backed store of delivery marks. */
export class HookReplayGuard {
  private get;
  private put;
  private del;
  private prune;
  private writes = 0;

  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.get = db.prepare<[string], { updated_at: number }>("SELECT updated_at FROM kv WHERE key = ?");
    this.put = db.prepare(
      "INSERT INTO kv (key, value, updated_at) VALUES (?, '1', ?) ON CONFLICT(key) DO UPDATE SET updated_at = excluded.updated_at",
    );
    this.del = db.prepare("DELETE FROM kv WHERE key = ?");
    this.prune = db.prepare("DELETE FROM kv WHERE key >= ? AND key < ? AND updated_at < ?");
  }

  /**
   * Marks a delivery of hook `name`, or answers which mark it matched (a replay). `signedBody` is
   * the raw body of a signed hook (undefined for a shared-secret hook).
   */
  claim(
    name: string,
    windowMs: number,
    deliveryId: string | undefined,
    signedBody: Buffer | undefined,
  ): { ok: true; marks: DeliveryMarks } | { ok: false; matched: "delivery id" | "signed body" } {
    const now = this.now();
    const hookPrefix = `${PREFIX}${JSON.stringify(name)}:`;
    const keys: [string, "delivery id" | "signed body"][] = [];
    if (deliveryId !== undefined) keys.push([`${hookPrefix}id:${deliveryId}`, "delivery id"]);
    if (signedBody !== undefined)
      keys.push([
        `${hookPrefix}body:${createHash("sha256").update(signedBody).digest("hex")}`,
        "signed body",
      ]);
    for (const [key, what] of keys) {
      const row = this.get.get(key);
      if (row && now - row.updated_at < windowMs) return { ok: false, matched: what };
    }
    for (const [key] of keys) this.put.run(key, now);
    if (++this.writes % 100 === 0) this.prune.run(hookPrefix, hookPrefix.slice(0, -1) + ";", now - windowMs);
    return { ok: true, marks: { keys: keys.map(([k]) => k) } };
  }

  /** Removes marks of a delivery that was not admitted, so the sender's retry runs. */
  release(marks: DeliveryMarks): void {
    for (const k of marks.keys) this.del.run(k);
  }
}
