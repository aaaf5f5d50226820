/**
 * Cursor pagination shared by the `/api` lists (agents, sessions, messages): every list takes
 * `?limit=N&after=<cursor>` and answers `next_after`, the `after` of the next page or `null` on the
 * last one. A bad value answers 400 `invalid_query` naming the parameter.
 *
 * Invariant: a page is read with one extra row, so `next_after` is null exactly when nothing follows.
 */
import type { Db } from "../../store/db.js";
import type { SessionRow } from "../../session/session-store.js";
import { apiError } from "./api-errors.js";

/** An integer query parameter from `min` to `max` (`dflt` when absent), or 400 `invalid_query`. */
export function intParam(url: URL, name: string, dflt: number, max: number, min = 0): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === "") return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw apiError(
      400,
      "invalid_query",
      `${name}: expected an integer from ${min} to ${max}, got "${raw}"`,
      name,
    );
  return n;
}

/** `limit`: 1..max, `dflt` when absent. */
export function limitParam(url: URL, dflt: number, max: number): number {
  return intParam(url, "limit", dflt, max, 1);
}

/** Splits the rows read with one extra: the page and whether another follows. */
export function splitPage<T>(rows: T[], limit: number): { page: T[]; more: boolean } {
  return { page: rows.slice(0, limit), more: rows.length > limit };
}

/**
 * Pages a list held in memory in its own order; `after` is the id of the last item seen. An `after`
 * that is not in the list (deleted since) answers 400, so a client never silently skips or repeats.
 */
export function pageById<T extends { id: string }>(
  items: T[],
  url: URL,
  dflt: number,
  max: number,
): { page: T[]; nextAfter: string | null } {
  const limit = limitParam(url, dflt, max);
  const after = url.searchParams.get("after");
  let start = 0;
  if (after !== null && after !== "") {
    const i = items.findIndex((x) => x.id === after);
    if (i < 0)
      throw apiError(
        400,
        "invalid_query",
        `after: "${after}" is not in the list (deleted since?); start again without after`,
        "after",
      );
    start = i + 1;
  }
  const { page, more } = splitPage(items.slice(start, start + limit + 1), limit);
  return { page, nextAfter: more ? (page[page.length - 1]?.id ?? null) : null };
}

export type SessionListRow = SessionRow & { message_count: number };

/**
 * Session lists, most recently updated first (ties by id), paged by an opaque cursor
 * `<updated_at>.<id>` of the last session seen: stable while sessions are added or updated (an
 * updated session moves to the front, after the pages already read).
 */
export class SessionPager {
  private byAgent;
  private live;

  constructor(db: Db) {
    const count = "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count";
    const after = "(s.updated_at < ? OR (s.updated_at = ? AND s.id < ?))";
    const order = "ORDER BY s.updated_at DESC, s.id DESC LIMIT ?";
    this.byAgent = db.prepare<[string, number, number, string, number], SessionListRow>(
      `SELECT s.*, ${count} FROM sessions s WHERE s.agent_id = ? AND ${after} ${order}`,
    );
    this.live = db.prepare<[number, number, string, number], SessionListRow>(
      `SELECT s.*, ${count} FROM session_heads h JOIN sessions s ON s.id = h.session_id WHERE ${after} ${order}`,
    );
  }

  /** All sessions of one agent (live and archived), or the live session of every key without one. */
  page(url: URL, agentId: string | undefined): { rows: SessionListRow[]; nextAfter: string | null } {
    const limit = limitParam(url, 100, 1000);
    const raw = url.searchParams.get("after");
    let ts = Number.MAX_SAFE_INTEGER;
    let id = "";
    if (raw !== null && raw !== "") {
      const m = /^(\d+)\.(.+)$/.exec(raw);
      if (!m)
        throw apiError(
          400,
          "invalid_query",
          `after: expected the next_after of a previous page, got "${raw}"`,
          "after",
        );
      ts = Number(m[1]);
      id = m[2] ?? "";
    }
    const rows =
      agentId === undefined
        ? this.live.all(ts, ts, id, limit + 1)
        : this.byAgent.all(agentId, ts, ts, id, limit + 1);
    const { page, more } = splitPage(rows, limit);
    const last = page[page.length - 1];
    return { rows: page, nextAfter: more && last ? `${last.updated_at}.${last.id}` : null };
  }
}
