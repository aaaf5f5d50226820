/**
 * The data an approval question's buttons carry (Telegram `callback_data`, Discord `custom_id`) and
 * the command a press stands for.
 *
 * Invariants:
 * - an Approve button carries the approval id and the first {@link HASH_PREFIX_LENGTH} hex digits
 *   of the sha256 of the payload the question showed (`approve:<id>:<hash>[:host|:session]`, at most
 *   43 bytes: inside Telegram's 64-byte limit), so a press settles only that payload;
 * - a press stands for `/approve <id> <hash> [host|session]` or `/deny <id>`: the same command path
 *   (owner check, foreign chat check) as a typed answer;
 * - anything else (an id-only approve, a malformed hash) is not a decision: it parses to undefined.
 */
import { HASH_PREFIX_LENGTH } from "../../tools/approval-text.js";

/** A standing answer a button may carry. */
export type ButtonChoice = "host" | "session";

/** `approve:<id>:<hash prefix>[:<choice>]`; without a hash (none was given) `approve:<id>`. */
export function approveData(id: string, hash: string | undefined, choice?: ButtonChoice): string {
  const h = hash ? `:${hash.slice(0, HASH_PREFIX_LENGTH).toLowerCase()}` : "";
  return `approve:${id}${h}${choice ? `:${choice}` : ""}`;
}

/** `deny:<id>`: a no needs no binding (it runs nothing). */
export function denyData(id: string): string {
  return `deny:${id}`;
}

/** `show:<id>`: the whole question to the presser's private chat. */
export function showData(id: string): string {
  return `show:${id}`;
}

const HEX = `[0-9a-f]{${HASH_PREFIX_LENGTH}}`;
const APPROVE = new RegExp(`^approve:([a-z0-9]+):(${HEX})(?::(host|session))?$`);
const DENY = /^deny:([a-z0-9]+)$/;

/**
 * The command a press stands for (`/approve <id> <hash> [choice]`, `/deny <id>`), or undefined for
 * data that is not a well-formed decision (an Approve without the hash of what it showed included).
 */
export function pressCommand(data: string): string | undefined {
  const a = APPROVE.exec(data);
  if (a) return `/approve ${a[1] ?? ""} ${a[2] ?? ""}${a[3] ? ` ${a[3]}` : ""}`;
  const d = DENY.exec(data);
  if (d) return `/deny ${d[1] ?? ""}`;
  return undefined;
}

/** The approval id of a `show:<id>` press, or undefined. */
export function showId(data: string): string | undefined {
  return /^show:([a-z0-9]+)$/.exec(data)?.[1];
}
