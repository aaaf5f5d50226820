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
  /** When the platform last answered anything (a poll, a heartbeat ACK, an API call). */
  lastHeardAt?: number;
  /** When a message from a user last arrived. */
  lastInboundAt?: number;
  /** When a message last went out. */
  lastSentAt?: number;
}

/** What a live probe of a channel found. */
export interface ChannelProbe {
  ok: boolean;
  /** Round trip of the probe call, in ms. */
  rttMs: number;
  detail: string;
  /**
   * True when the platform holds messages the channel is not receiving (e.g. Telegram reports
   * pending updates twice in a row while the poller hears nothing): alive on the wire, dead in effect.
   */
  stuck?: boolean;
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
  /** Asks the platform something cheap and reports the round trip (the watchdog, `doctor --live`). */
  probe?(): Promise<ChannelProbe>;
  /** Tears the transport down and connects again with the live config (the watchdog's first remedy). */
  restart?(): Promise<void>;
  /**
   * Closes an approval question this channel sent: its buttons are edited away and `note` says how
   * it ended. False when the channel never sent it.
   */
  closeApproval?(approvalId: string, note: string): Promise<boolean>;
  /**
   * Tells the users whose pairing request the owner approved (and who were not told yet) that they
   * can talk to the assistant now; returns how many were told (common/pairing-welcome.ts).
   */
  welcomePaired?(): Promise<number>;
}
