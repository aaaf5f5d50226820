/**
 * The one small interface every chat channel adapter implements. The core never imports grammy or
 * discord.js: only `internal/channels/<name>/` does, loaded lazily when the channel is enabled.
 */
export type ChannelState = "starting" | "connected" | "reconnecting" | "stopped" | "error" | "disabled";

export interface ChannelStatus {
  state: ChannelState;
  detail?: string;
  /** e.g. bot username */
  identity?: string;
  since: number;
}

export interface SendOptions {
  /** Render markdown (default true). */
  markdown?: boolean;
  /** Buttons for approvals: id is passed back as `/approve <id>` or `/deny <id>`. */
  approvalId?: string;
  silent?: boolean;
}

export interface Channel {
  /** `telegram`, `discord`, `test`, ... also the prefix of its targets (`telegram:<chatId>`). */
  readonly id: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  status(): ChannelStatus;
  /**
   * Proactive delivery to a target (the part after `<id>:`), through the same pacing, formatting and
   * chunking as replies. Rejects with a ChannelError when delivery finally fails.
   */
  send(target: string, text: string, opts?: SendOptions): Promise<void>;
}

/** Channel error codes: `CHANNEL_REFUSED` = the remote said no (4xx); `CHANNEL_UNREACHABLE` = no answer. */
export class ChannelError extends Error {
  constructor(
    readonly code:
      "CHANNEL_REFUSED" | "CHANNEL_UNREACHABLE" | "CHANNEL_UNKNOWN_TARGET" | "CHANNEL_NOT_RUNNING",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChannelError";
  }
}
