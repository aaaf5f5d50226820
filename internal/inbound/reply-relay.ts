/**
 * The ports the front desk talks to on its way out: the relay that renders a turn's reply on a
 * platform (implemented by `channels/common/stream-relay.ts`) and where the owner's last target is
 * remembered (the channel registry). Channels implement these; the front desk never imports them.
 */
import type { AgentEvent } from "../core/agent-events.js";
import type { Logger } from "../log/logger.js";
import type { OutboundFile } from "../core/outbox.js";

/** How a turn's reply went out. */
export interface RelayOutcome {
  /** Messages that carry the final answer, in order. */
  finalMessageIds: string[];
  previewEdits: number;
  /** The final edit failed and the answer went out as new messages. */
  fellBack: boolean;
  error?: string;
}

/** One turn's reply on its way to a chat: fed the turn's events, resolves once delivered. */
export interface ReplyStreamPort {
  startTyping(): void;
  onEvent: (e: AgentEvent) => void;
  readonly done: Promise<RelayOutcome>;
}

/** Records replies between "stored" and "delivered", so a crash in between re-sends after restart. */
export interface DeliveryRecord {
  opened(requestId: string, chat: string, sessionKey: string): void;
  closed(requestId: string): void;
}

/** A channel's renderer of replies. `chatId` is opaque (the channel may encode a thread in it). */
export interface ReplyRelay {
  sendText(chatId: string, text: string, opts: { markdown: boolean }): Promise<unknown>;
  /** `override.mode: "off"` holds the preview back (a spoken answer goes out whole at the end). */
  stream(chatId: string, sessionKey?: string, override?: { mode?: "edit" | "off" }): ReplyStreamPort;
  /** The platform side: `sendFile` is absent on platforms without files. */
  readonly adapter: { sendFile?(chatId: string, file: OutboundFile): Promise<string> };
  readonly deliveries?: DeliveryRecord | undefined;
  readonly logger?: Logger | undefined;
}

/** Remembers the target the owner last wrote from (the channel registry). */
export interface LastTargetSink {
  setLastTarget(target: string): void;
}
