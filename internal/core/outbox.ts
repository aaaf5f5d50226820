/**
 * The Outbox port: "deliver this to that target" and "where did the owner last write from". Agent,
 * subagents, cron, heartbeat and tools depend on this, never on `internal/channels/`; the daemon's
 * wiring hands them the channel registry, which implements it.
 */

/** How a delivered message is rendered. */
export interface SendOptions {
  /** Render markdown (default true). */
  markdown?: boolean;
  /** Buttons for approvals: id is passed back as `/approve <id>` or `/deny <id>`. */
  approvalId?: string;
  /**
   * The hash prefix (sha256, its first 12 hex digits) of what the
   * question shows: the Approve buttons carry it back, so a press settles only that payload.
   */
  approvalHash?: string;
  /** Extra approve buttons for standing answers (`host`, `session`): `/approve <id> <choice>`. */
  approvalChoices?: readonly ("host" | "session")[];
  /** A "Show all" button: the question was cut, the press sends it whole to the owner's private chat. */
  approvalShowAll?: boolean;
  silent?: boolean;
}

/** How a file is shown in the chat. */
export type OutboundFileKind = "document" | "photo" | "audio" | "voice";

/** A file to send to a chat (send_file, voice replies). */
export interface OutboundFile {
  name: string;
  data: Buffer;
  kind: OutboundFileKind;
  mime?: string;
  caption?: string;
}

export interface Outbox {
  /**
   * Delivers text to `<channel>:<rest>`, or to `last` (the owner's last target). `none` and `""` are
   * no-ops. Rejects with a {@link ChannelError} when the target is unknown or delivery finally fails.
   */
  deliver(target: string, text: string, opts?: SendOptions): Promise<void>;
  /** The target the owner last wrote from (`telegram:123`), or undefined before the first message. */
  lastTarget(): string | undefined;
}

/** Delivery error codes: `CHANNEL_REFUSED` = the remote said no (4xx); `CHANNEL_UNREACHABLE` = no answer. */
export type ChannelErrorCode =
  | "CHANNEL_REFUSED"
  | "CHANNEL_UNREACHABLE"
  | "CHANNEL_UNKNOWN_TARGET"
  | "CHANNEL_NOT_RUNNING"
  | "CHANNEL_FILE_TOO_LARGE"
  | "CHANNEL_NO_FILES";

/** Why a delivery failed. Thrown by outboxes and by the channel adapters behind them. */
export class ChannelError extends Error {
  constructor(
    readonly code: ChannelErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChannelError";
  }
}
