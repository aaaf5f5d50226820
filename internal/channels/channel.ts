/**
 * The one small interface every chat channel adapter implements. The core never imports grammy or
 * discord.js: only `internal/channels/<name>/` does, loaded lazily when the channel is enabled.
 */
import type { OutboundFile, OutboundFileKind, SendOptions } from "../core/outbox.js";

export {
  ChannelError,
  type ChannelErrorCode,
  type OutboundFile,
  type OutboundFileKind,
  type SendOptions,
} from "../core/outbox.js";

export type ChannelState = "starting" | "connected" | "reconnecting" | "stopped" | "error" | "disabled";

export interface ChannelStatus {
  state: ChannelState;
  detail?: string;
  /** e.g. bot username */
  identity?: string;
  since: number;
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
