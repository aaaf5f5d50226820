/**
 * OpenClaw `channels.telegram` / `channels.discord` -> Familiar `channels.*`, and OpenClaw's DM
 * pairing approvals -> Familiar's pairing store (so `familiar pairing revoke` works on them).
 *
 * Who may talk to the bot is carried over exactly or refused with a line: `dmPolicy` maps one to one;
 * `allowFrom` keeps numeric ids (OpenClaw's `telegram:`/`tg:`/`discord:` prefixes dropped) and
 * reports entries Familiar cannot match (`@usernames`, `accessGroup:` references). A Telegram group
 * allowlist becomes `groups`; per-sender group allowlists (`groupAllowFrom`) have no Familiar
 * equivalent and are reported. Tokens become `${TELEGRAM_BOT_TOKEN}` / `${DISCORD_BOT_TOKEN}`.
 */
import { secretRef } from "./secrets.js";
import { arr, obj, str, type Json } from "./openclaw-source.js";
import type { EnvVar, ImportItem, PlannedConfig } from "./import-types.js";

const POLICIES = new Set(["pairing", "allowlist", "open", "disabled"]);

export interface ChannelsPlan {
  planned: PlannedConfig[];
  items: ImportItem[];
  env: EnvVar[];
  /** Pairing approvals to store: channel and user id. */
  approvals: { channel: "telegram" | "discord"; userId: string }[];
}

/** A sender entry as a bare id, or undefined when Familiar cannot match it. */
function senderId(channel: "telegram" | "discord", entry: unknown): string | undefined {
  const s = String(entry).trim();
  const bare = s
    .replace(channel === "telegram" ? /^(telegram|tg):/i : /^(discord|user):/i, "")
    .replace(/^<@!?(\d+)>$/, "$1");
  return /^\d+$/.test(bare) ? bare : undefined;
}

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

function telegram(t: Json, out: ChannelsPlan): void {
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
  const apiRoot = str(t.apiRoot);
  if (apiRoot && apiRoot.replace(/\/+$/, "") !== "https://api.telegram.org")
    cfg.api_root = apiRoot.replace(/\/+$/, "");
  const policy = str(t.dmPolicy) ?? "pairing";
  if (POLICIES.has(policy)) cfg.dm_policy = policy;
  else
    out.items.push({
      area: "channels",
      name: `telegram dmPolicy ${policy}`,
      status: "cannot",
      detail: "kept Familiar's pairing",
    });
  const allow = allowList("telegram", arr(t.allowFrom), "allowFrom", out.items);
  if (policy === "open" && arr(t.allowFrom).includes("*")) cfg.dm_policy = "open";
  cfg.allow_from = allow;
  const groupPolicy = str(t.groupPolicy) ?? "allowlist";
  const groups = obj(t.groups);
  const groupIds = Object.keys(groups).filter((g) => g !== "*");
  if (groupPolicy === "disabled") cfg.groups = [];
  else if (groupPolicy === "open" || "*" in groups) cfg.groups = ["*"];
  else cfg.groups = groupIds;
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
      detail: `dm_policy ${String(cfg.dm_policy)}, allow_from [${allow.join(", ")}], groups [${(cfg.groups as string[]).join(", ")}]`,
    },
    edits: Object.entries(cfg).map(([k, v]) => ({
      kind: "set" as const,
      path: ["channels", "telegram", k],
      value: v,
    })),
  });
}

function discord(d: Json, out: ChannelsPlan): void {
  const cfg: Record<string, unknown> = { enabled: d.enabled !== false };
  const token = secretRef(d.token, "DISCORD_BOT_TOKEN", "channels.discord.token");
  cfg.token = token?.ref ?? "${DISCORD_BOT_TOKEN}";
  out.env.push(
    token?.env ?? { name: "DISCORD_BOT_TOKEN", from: "OpenClaw read DISCORD_BOT_TOKEN from its environment" },
  );
  const policy = str(d.dmPolicy) ?? str(obj(d.dm).policy) ?? "pairing";
  cfg.dm_policy = POLICIES.has(policy) ? policy : "pairing";
  cfg.allow_from = allowList("discord", arr(d.allowFrom ?? obj(d.dm).allowFrom), "allowFrom", out.items);
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
  cfg.guilds = guilds;
  out.planned.push({
    item: {
      area: "channels",
      name: "discord",
      detail: `dm_policy ${String(cfg.dm_policy)}, ${Object.keys(guilds).length} guilds`,
    },
    edits: Object.entries(cfg).map(([k, v]) => ({
      kind: "set" as const,
      path: ["channels", "discord", k],
      value: v,
    })),
  });
}

export function mapChannels(
  config: Json,
  pairing: { channel: string; account: string; entry: string }[],
): ChannelsPlan {
  const out: ChannelsPlan = { planned: [], items: [], env: [], approvals: [] };
  const channels = obj(config.channels);
  if (channels.telegram) telegram(obj(channels.telegram), out);
  if (channels.discord) discord(obj(channels.discord), out);
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
    if (!out.approvals.some((a) => a.channel === p.channel && a.userId === id))
      out.approvals.push({ channel: p.channel, userId: id });
  }
  return out;
}
