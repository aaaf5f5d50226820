/**
 * OpenClaw `channels.telegram` / `channels.discord` -> Familiar `channels.*`, and OpenClaw's DM
 * pairing approvals -> Familiar's pairing store (so `familiar pairing revoke` works on them).
 *
 * Who may talk to the bot is carried over exactly or refused with a line: `dmPolicy` maps one to one;
 * `allowFrom` keeps numeric ids (OpenClaw's `telegram:`/`tg:`/`discord:` prefixes dropped) and
 * reports entries Familiar cannot match (`@usernames`, `accessGroup:` references). A Telegram group
 * allowlist becomes `groups`; per-sender group allowlists (`groupAllowFrom`) have no Familiar
 * equivalent and are reported. Tokens become `${TELEGRAM_BOT_TOKEN}` / `${DISCORD_BOT_TOKEN}`.
 *
 * openclaw.json may have been written by the agent it configures, so what opens a door is asked
 * (consent.ts), never carried silently: a Bot API root off this machine (the token goes there), an
 * open DM policy, allow lists, group and guild lists, and each pairing approval. Left out, the
 * channel comes in closed: pairing, nobody allowed yet, no groups.
 *
 * Over 300 lines on purpose: Telegram and Discord settings map onto one shape, with every setting that
 * grants power reported and asked about in the same place (docs/import-openclaw.md).
 */
import { Consent, gate, isLocalUrl } from "./consent.js";
import { secretRef } from "./secrets.js";
import { arr, obj, str, type Json } from "./openclaw-source.js";
import type { EnvVar, ImportItem, PlannedConfig } from "./import-types.js";
import { allowEntries, ownerIds, senderId } from "./owner-ids.js";

const POLICIES = new Set(["pairing", "allowlist", "open", "disabled"]);

export interface ChannelsPlan {
  planned: PlannedConfig[];
  items: ImportItem[];
  env: EnvVar[];
  /** Pairing approvals to store: channel and user id. */
  approvals: { channel: "telegram" | "discord"; userId: string }[];
  /**
   * `<channel>:<id>` of the owner's own chats: the owner openclaw.json names (owner-ids.ts) and the
   * senders the owner accepted (allow lists, pairings).
   */
  known: Set<string>;
  /** The owner openclaw.json itself names, per `<channel>:<id>`, with why. */
  owners: Map<string, string>;
}

/**
 * `"; the owner's own (...)"` when every id names the owner (nothing to ask), else "": an allow
 * list with anyone else on it grants power and is asked.
 */
function ownersOnly(out: ChannelsPlan, channel: "telegram" | "discord", ids: string[]): string {
  const why = ids.map((id) => out.owners.get(`${channel}:${id}`));
  return why.every((w) => w !== undefined) ? `; the owner's own: ${[...new Set(why)].join(", ")}` : "";
}

/** Pushes the planned change when it needs no yes, or when the owner gave it. */
function offer(
  out: ChannelsPlan,
  consent: Consent,
  p: PlannedConfig,
  risk?: { key: string; why: string },
): boolean {
  const g = risk ? gate(consent, risk.key, risk.why, p, out.items) : p;
  if (g) out.planned.push(g);
  return g !== undefined;
}

const set = (channel: string, k: string, v: unknown): PlannedConfig["edits"][number] => ({
  kind: "set",
  path: ["channels", channel, k],
  value: v,
});

function allowList(
  channel: "telegram" | "discord",
  list: unknown[],
  where: string,
  items: ImportItem[],
): string[] {
  const ids: string[] = [];
  for (const e of list) {
    const id = senderId(channel, e);
    if (id) ids.push(id);
    else if (String(e) !== "*")
      items.push({
        area: "channels",
        name: `${channel} ${where} entry ${String(e)}`,
        status: "cannot",
        detail:
          channel === "telegram"
            ? "Familiar matches Telegram users by numeric id only; add the id to channels.telegram.allow_from"
            : "Familiar matches Discord users by numeric id only; add the id to channels.discord.allow_from",
      });
  }
  return [...new Set(ids)];
}

function telegram(t: Json, out: ChannelsPlan, consent: Consent): void {
  const cfg: Record<string, unknown> = { enabled: t.enabled !== false };
  const token = secretRef(t.botToken, "TELEGRAM_BOT_TOKEN", "channels.telegram.botToken");
  if (token) {
    cfg.token = token.ref;
    if (token.env) out.env.push(token.env);
  } else if (str(t.tokenFile)) {
    cfg.token = "${TELEGRAM_BOT_TOKEN}";
    out.env.push({
      name: "TELEGRAM_BOT_TOKEN",
      from: `the file ${str(t.tokenFile)} (channels.telegram.tokenFile)`,
    });
  } else {
    cfg.token = "${TELEGRAM_BOT_TOKEN}";
    out.env.push({
      name: "TELEGRAM_BOT_TOKEN",
      from: "OpenClaw read TELEGRAM_BOT_TOKEN from its environment",
    });
  }
  const later: [PlannedConfig, { key: string; why: string } | undefined][] = [];
  const apiRoot = str(t.apiRoot)?.replace(/\/+$/, "");
  if (apiRoot && apiRoot !== "https://api.telegram.org") {
    const p: PlannedConfig = {
      item: { area: "channels", name: "telegram api_root", detail: apiRoot },
      edits: [set("telegram", "api_root", apiRoot)],
    };
    later.push([
      p,
      isLocalUrl(apiRoot)
        ? undefined
        : { key: "telegram.api_root", why: "the bot token is sent there with every request" },
    ]);
  }
  const policy = str(t.dmPolicy) ?? "pairing";
  cfg.dm_policy = POLICIES.has(policy) && policy !== "open" ? policy : "pairing";
  if (policy === "open")
    later.push([
      {
        item: { area: "channels", name: "telegram dm_policy open" },
        edits: [set("telegram", "dm_policy", "open")],
      },
      { key: "telegram.dm_policy", why: "anyone who finds the bot may talk to your assistant" },
    ]);
  else if (!POLICIES.has(policy))
    out.items.push({
      area: "channels",
      name: `telegram dmPolicy ${policy}`,
      status: "cannot",
      detail: "kept Familiar's pairing",
    });
  const allow = allowList("telegram", allowEntries("telegram", t), "allowFrom", out.items);
  if (allow.length > 0)
    later.push([
      {
        item: {
          area: "channels",
          name: "telegram allow_from",
          detail: `[${allow.join(", ")}]${ownersOnly(out, "telegram", allow)}`,
        },
        edits: [set("telegram", "allow_from", allow)],
      },
      ownersOnly(out, "telegram", allow)
        ? undefined
        : { key: "telegram.allow_from", why: "these senders may talk to your assistant without pairing" },
    ]);
  const groupPolicy = str(t.groupPolicy) ?? "allowlist";
  const groups = obj(t.groups);
  const groupIds = Object.keys(groups).filter((g) => g !== "*");
  const groupList =
    groupPolicy === "disabled" ? [] : groupPolicy === "open" || "*" in groups ? ["*"] : groupIds;
  if (groupList.length > 0)
    later.push([
      {
        item: { area: "channels", name: "telegram groups", detail: `[${groupList.join(", ")}]` },
        edits: [set("telegram", "groups", groupList)],
      },
      {
        key: "telegram.groups",
        why: groupList.includes("*")
          ? "the bot answers in any group anyone adds it to"
          : "the bot answers the members of these groups",
      },
    ]);
  const mentions = Object.values(groups).map((g) => obj(g).requireMention);
  const explicit = mentions.filter((m): m is boolean => typeof m === "boolean");
  cfg.require_mention =
    typeof t.requireMention === "boolean"
      ? t.requireMention
      : explicit.length > 0
        ? explicit.every(Boolean)
        : true;
  if (new Set(explicit).size > 1)
    out.items.push({
      area: "channels",
      name: "telegram per-group requireMention",
      status: "cannot",
      detail: `Familiar has one require_mention for all groups; set to ${String(cfg.require_mention)}`,
    });
  if (arr(t.groupAllowFrom).length > 0)
    out.items.push({
      area: "channels",
      name: "telegram groupAllowFrom",
      status: "cannot",
      detail:
        "Familiar has no per-sender allowlist in groups: everyone in an allowed group may mention the bot",
    });
  if (Object.keys(obj(t.accounts)).length > 0)
    out.items.push({
      area: "channels",
      name: "telegram accounts",
      status: "cannot",
      detail: "Familiar runs one Telegram bot; the default account was imported",
    });
  out.planned.push({
    item: {
      area: "channels",
      name: "telegram",
      detail: `dm_policy ${String(cfg.dm_policy)}, require_mention ${String(cfg.require_mention)}`,
    },
    edits: Object.entries(cfg).map(([k, v]) => set("telegram", k, v)),
  });
  for (const [p, risk] of later)
    if (offer(out, consent, p, risk) && risk?.key === "telegram.allow_from")
      for (const id of allow) out.known.add(`telegram:${id}`);
}

function discord(d: Json, out: ChannelsPlan, consent: Consent): void {
  const cfg: Record<string, unknown> = { enabled: d.enabled !== false };
  const token = secretRef(d.token, "DISCORD_BOT_TOKEN", "channels.discord.token");
  cfg.token = token?.ref ?? "${DISCORD_BOT_TOKEN}";
  out.env.push(
    token?.env ?? { name: "DISCORD_BOT_TOKEN", from: "OpenClaw read DISCORD_BOT_TOKEN from its environment" },
  );
  const policy = str(d.dmPolicy) ?? str(obj(d.dm).policy) ?? "pairing";
  cfg.dm_policy = POLICIES.has(policy) && policy !== "open" ? policy : "pairing";
  const allow = allowList("discord", allowEntries("discord", d), "allowFrom", out.items);
  const guilds: Record<string, { channels: string[]; require_mention: boolean }> = {};
  for (const [gid, raw] of Object.entries(obj(d.guilds))) {
    const g = obj(raw);
    const chans = Object.entries(obj(g.channels))
      .filter(([, c]) => obj(c).enabled !== false && obj(c).allow !== false)
      .map(([name]) => name);
    guilds[gid] = { channels: chans.length > 0 ? chans : ["*"], require_mention: g.requireMention !== false };
    if (arr(g.users).length > 0)
      out.items.push({
        area: "channels",
        name: `discord guild ${gid} users`,
        status: "cannot",
        detail: "Familiar has no per-user allowlist in guilds",
      });
  }
  out.planned.push({
    item: { area: "channels", name: "discord", detail: `dm_policy ${String(cfg.dm_policy)}` },
    edits: Object.entries(cfg).map(([k, v]) => set("discord", k, v)),
  });
  if (policy === "open")
    offer(
      out,
      consent,
      {
        item: { area: "channels", name: "discord dm_policy open" },
        edits: [set("discord", "dm_policy", "open")],
      },
      { key: "discord.dm_policy", why: "anyone who finds the bot may talk to your assistant" },
    );
  if (
    allow.length > 0 &&
    offer(
      out,
      consent,
      {
        item: {
          area: "channels",
          name: "discord allow_from",
          detail: `[${allow.join(", ")}]${ownersOnly(out, "discord", allow)}`,
        },
        edits: [set("discord", "allow_from", allow)],
      },
      ownersOnly(out, "discord", allow)
        ? undefined
        : { key: "discord.allow_from", why: "these senders may talk to your assistant without pairing" },
    )
  )
    for (const id of allow) out.known.add(`discord:${id}`);
  if (Object.keys(guilds).length > 0)
    offer(
      out,
      consent,
      {
        item: { area: "channels", name: "discord guilds", detail: Object.keys(guilds).join(", ") },
        edits: [set("discord", "guilds", guilds)],
      },
      { key: "discord.guilds", why: "the bot answers in these servers' channels" },
    );
}

export function mapChannels(
  config: Json,
  pairing: { channel: string; account: string; entry: string }[],
  consent: Consent = new Consent(),
): ChannelsPlan {
  const owners = ownerIds(config);
  const out: ChannelsPlan = {
    planned: [],
    items: [],
    env: [],
    approvals: [],
    known: new Set(owners.keys()),
    owners,
  };
  const channels = obj(config.channels);
  if (channels.telegram) telegram(obj(channels.telegram), out, consent);
  if (channels.discord) discord(obj(channels.discord), out, consent);
  for (const name of Object.keys(channels))
    if (name !== "telegram" && name !== "discord")
      out.items.push({
        area: "channels",
        name,
        status: "cannot",
        detail: "Familiar has Telegram, Discord and its gateway only",
      });
  for (const p of pairing) {
    if (p.channel !== "telegram" && p.channel !== "discord") {
      out.items.push({
        area: "pairing",
        name: `${p.channel} ${p.entry}`,
        status: "cannot",
        detail: `no ${p.channel} channel in Familiar`,
      });
      continue;
    }
    const id = senderId(p.channel, p.entry);
    if (!id) {
      out.items.push({
        area: "pairing",
        name: `${p.channel} ${p.entry}`,
        status: "cannot",
        detail: "not a numeric user id",
      });
      continue;
    }
    if (out.approvals.some((a) => a.channel === p.channel && a.userId === id)) continue;
    const key = `pairing:${p.channel}:${id}`;
    if (!owners.has(`${p.channel}:${id}`) && !consent.accepts(key)) {
      out.items.push({
        area: "pairing",
        name: `${p.channel} user ${id}`,
        status: "confirm",
        key,
        detail: "approved in OpenClaw; would let this sender talk to your assistant",
      });
      continue;
    }
    out.approvals.push({ channel: p.channel, userId: id });
    out.known.add(`${p.channel}:${id}`);
  }
  return out;
}
