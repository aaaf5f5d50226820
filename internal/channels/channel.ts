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
  /**
   * Sends a file to a target. Rejects with a ChannelError (CHANNEL_FILE_TOO_LARGE before any upload
   * when the platform's limit for that kind is exceeded). Absent on channels without files.
   */
  sendFile?(target: string, file: OutboundFile): Promise<void>;
  /** The platform's upload limit for a kind of file, in bytes. */
  maxFileBytes?(kind: OutboundFileKind): number;
}

/** Channel error codes: `CHANNEL_REFUSED` = the remote said no (4xx); `CHANNEL_UNREACHABLE` = no answer. */
export class ChannelError extends Error {
  constructor(
    readonly code:
      | "CHANNEL_REFUSED"
      | "CHANNEL_UNREACHABLE"
      | "CHANNEL_UNKNOWN_TARGET"
      | "CHANNEL_NOT_RUNNING"
      | "CHANNEL_FILE_TOO_LARGE"
      | "CHANNEL_NO_FILES",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChannelError";
  }
}
