/**
 * A session's model history kept between turns and extended by the messages stored since, instead
 * of rebuilt from every stored message on every turn (issue 26: a 4,000-message session spent ~0.5 ms
 * and most of its garbage per turn converting the same rows again).
 *
 * The result is always `toChatMessages(orderByTurn(rows, uptoId))`, byte for byte. What is kept is
 * tied to the session store's cached row array (`SessionStore.messagesView`): that array only ever
 * grows by appended rows, and a reload, an eviction, a changed status or a deleted row gives the
 * session a new array, which starts over here (the old entry goes with the old array: a WeakMap).
 * A compaction or `/new` moves the turn to another session id, so another array. Appended rows are
 * taken over only when they sort after everything converted so far and no row is hidden by `uptoId`;
 * anything else (a reply stored behind a queued message, an older turn run late) converts again.
 */
import type { ChatMessage } from "../models/types.js";
import type { StoredMessage } from "../session/session-store.js";
import { ChatHistoryBuilder, firstIds, orderByTurn, toChatMessages } from "./history.js";

interface Entry {
  builder: ChatHistoryBuilder;
  /** Rows of the array converted so far (a prefix of it). */
  n: number;
  /** The id of the last converted row of the array (ids only grow). */
  lastId: number;
  /** Request id -> id of its first row, over the converted rows. */
  first: Map<string, number>;
  /** The largest turn anchor converted (rows are in anchor order). */
  lastAnchor: number;
}

const entries = new WeakMap<readonly StoredMessage[], Entry>();

/**
 * The model history of a session's stored rows as of the turn whose user message is `uptoId`:
 * the same messages as `toChatMessages(orderByTurn(rows, uptoId))`, in a new array the caller may
 * change (the messages themselves are shared between turns and must not be modified).
 */
export function historyOf(rows: readonly StoredMessage[], uptoId?: number): ChatMessage[] {
  const e = entries.get(rows);
  if (e && extend(e, rows, uptoId)) return e.builder.snapshot();
  return rebuild(rows, uptoId);
}

/** Converts the rows appended since `e` was built; false (nothing changed) when they cannot be. */
function extend(e: Entry, rows: readonly StoredMessage[], uptoId: number | undefined): boolean {
  const n = rows.length;
  if (n < e.n || (e.n > 0 && rows[e.n - 1]!.id !== e.lastId)) return false;
  const filtered = uptoId !== undefined && hasId(rows, uptoId);
  if (filtered && e.lastAnchor > uptoId) return false; // converted rows this turn must not see
  // Check first, apply after: a refusal leaves the entry as it was.
  let lastAnchor = e.lastAnchor;
  let lastId = e.lastId;
  let added: Map<string, number> | undefined;
  for (let i = e.n; i < n; i++) {
    const r = rows[i]!;
    if (r.id <= lastId) return false;
    lastId = r.id;
    const key = r.request_id;
    let anchor = r.id;
    if (key !== null) {
      const known = e.first.get(key) ?? added?.get(key);
      if (known !== undefined) anchor = known;
      else (added ??= new Map()).set(key, r.id);
    }
    if (anchor < lastAnchor || (filtered && anchor > uptoId)) return false;
    lastAnchor = anchor;
  }
  if (added) for (const [k, v] of added) e.first.set(k, v);
  for (let i = e.n; i < n; i++) e.builder.push(rows[i]!);
  e.n = n;
  e.lastId = lastId;
  e.lastAnchor = lastAnchor;
  return true;
}

/**
 * Sessions shorter than this are converted afresh every turn (a few microseconds) and keep nothing
 * here: a busy daemon's many short chats cost no memory for it.
 */
const MIN_KEPT_ROWS = 16;

/** Converts all rows; keeps the result for the next turn when every row was visible and in id order. */
function rebuild(rows: readonly StoredMessage[], uptoId: number | undefined): ChatMessage[] {
  entries.delete(rows);
  if (rows.length < MIN_KEPT_ROWS) return toChatMessages(orderByTurn(rows, uptoId));
  let ascending = true;
  for (let i = 1; i < rows.length && ascending; i++) ascending = rows[i - 1]!.id < rows[i]!.id;
  const ids = firstIds(rows);
  const first = ids.first;
  const anchor = (m: StoredMessage): number =>
    m.request_id === null ? m.id : (first.get(m.request_id) ?? m.id);
  const ordered = orderByTurn(rows, undefined, ids);
  const lastAnchor = ordered.length > 0 ? anchor(ordered[ordered.length - 1]!) : 0;
  const hidden = uptoId !== undefined && lastAnchor > uptoId && rows.some((m) => m.id === uptoId);
  if (!ascending || hidden) return toChatMessages(orderByTurn(rows, uptoId, ids));
  const builder = new ChatHistoryBuilder();
  for (const m of ordered) builder.push(m);
  entries.set(rows, {
    builder,
    n: rows.length,
    lastId: rows.length > 0 ? rows[rows.length - 1]!.id : 0,
    first,
    lastAnchor,
  });
  return builder.snapshot();
}

/** Binary search of rows in ascending id order. */
function hasId(rows: readonly StoredMessage[], id: number): boolean {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = rows[mid]!.id;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}
