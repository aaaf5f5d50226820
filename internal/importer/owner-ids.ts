/**
 * Who the owner is, as openclaw.json itself says: an allow list, a pairing, a heartbeat or cron
 * target that names only the owner gives nobody else any power, so it imports without asking.
 *
 * On each channel (Telegram, Discord) the owner is:
 * - the single user `commands.ownerAllowFrom` names for that channel (`telegram:<id>`), and
 * - the only user the channel's `allowFrom` lists, when it lists exactly one (every entry a plain id).
 *
 * Invariant (fail closed): a channel whose door is open (`dmPolicy: open`, or `*` in its allow list)
 * names no owner at all, since whoever it names could be anyone who walked in; two or more users,
 * a wildcard or an entry Familiar cannot match (`@name`) name no owner through that list.
 */
import { arr, obj, str, type Json } from "./openclaw-source.js";

export type OwnerChannel = "telegram" | "discord";

/** A sender entry as a bare numeric id, or undefined when Familiar cannot match it. */
export function senderId(channel: OwnerChannel, entry: unknown): string | undefined {
  const s = String(entry).trim();
  const bare = s
    .replace(channel === "telegram" ? /^(telegram|tg):/i : /^(discord|user):/i, "")
    .replace(/^<@!?(\d+)>$/, "$1");
  return /^\d+$/.test(bare) ? bare : undefined;
}

/** The one id a list names, or undefined when it names none, several, a wildcard or an unmatchable entry. */
function single(channel: OwnerChannel, list: unknown[]): string | undefined {
  const ids = list.map((e) => senderId(channel, e));
  if (ids.length === 0 || ids.some((id) => id === undefined)) return undefined;
  const distinct = new Set(ids);
  return distinct.size === 1 ? [...distinct][0] : undefined;
}

/** The channel's DM allow list as openclaw.json spells it (Discord also nests it under `dm`). */
export function allowEntries(channel: OwnerChannel, c: Json): unknown[] {
  return arr(channel === "discord" ? (c.allowFrom ?? obj(c.dm).allowFrom) : c.allowFrom);
}

/**
 * `<channel>:<id>` of the owner on each channel, with why it is the owner (for the report line).
 * Empty for a channel whose door is open.
 */
export function ownerIds(config: Json): Map<string, string> {
  const out = new Map<string, string>();
  const channels = obj(config.channels);
  const owners = arr(obj(config.commands).ownerAllowFrom).map((e) => String(e).trim());
  for (const channel of ["telegram", "discord"] as const) {
    const c = obj(channels[channel]);
    if (Object.keys(c).length === 0) continue;
    const policy = str(c.dmPolicy) ?? str(obj(c.dm).policy);
    const allow = allowEntries(channel, c);
    if (policy === "open" || allow.some((e) => String(e).trim() === "*")) continue;
    const prefix = `${channel}:`;
    const named = owners.filter((o) => o.toLowerCase().startsWith(prefix));
    const byCommands = single(channel, named);
    if (byCommands) out.set(`${channel}:${byCommands}`, "the owner openclaw.json names");
    const byAllow = single(channel, allow);
    if (byAllow && !out.has(`${channel}:${byAllow}`))
      out.set(`${channel}:${byAllow}`, "the only user openclaw.json allows");
  }
  return out;
}
