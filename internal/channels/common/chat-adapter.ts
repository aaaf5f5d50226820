/**
 * What the stream relay needs from a platform (Telegram, Discord), and the relay's settings. A type
 * file of its own so the relay and its per-turn stream can share it without importing each other.
 */
import type { ChunkLimits } from "./chunking.js";
import type { OutboundFile, OutboundFileKind } from "../../core/outbox.js";

export interface OutboundOptions {
  /** Render markdown (the adapter falls back to plain text when the platform rejects it). */
  markdown: boolean;
  /** Attach approve/deny buttons for this approval id. */
  approvalId?: string;
  /** The shown payload's hash prefix, carried by the Approve buttons (`approve:<id>:<hash>`). */
  approvalHash?: string;
  /** Extra approve buttons for standing answers (containment): `host`, `session`. */
  approvalChoices?: readonly ("host" | "session")[];
  /** A "Show all" button (`show:<id>`): the question was cut. */
  approvalShowAll?: boolean;
  silent?: boolean;
}

/**
 * What the relay needs from a platform. `chatId` is opaque to the relay (the adapter may encode a
 * thread in it). Methods reject when the platform finally refused or could not be reached (after
 * the adapter's own retries, e.g. on 429).
 */
export interface ChatAdapter {
  readonly limits: ChunkLimits;
  send(chatId: string, text: string, opts: OutboundOptions): Promise<string>;
  edit(chatId: string, messageId: string, text: string, opts: OutboundOptions): Promise<void>;
  delete(chatId: string, messageId: string): Promise<void>;
  typing(chatId: string): Promise<void>;
  /** Uploads a file (document, photo, audio, voice note) with its caption; returns the message id. */
  sendFile?(chatId: string, file: OutboundFile): Promise<string>;
  /** The platform's upload limit for a kind of file, in bytes. */
  maxFileBytes?(kind: OutboundFileKind): number;
}

export interface RelayOptions {
  mode: "edit" | "off";
  editIntervalMs: number;
  showTools: boolean;
}

export const TYPING_INTERVAL_MS = 4000;
export const ERROR_REPLY_INTERVAL_MS = 60_000;
