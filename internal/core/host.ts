/**
 * The contract between the agent core and everything that feeds it (channels, gateway, API, cron,
 * heartbeat, subagents). Implemented by `internal/agent/host.ts`. Callers never import the loop.
 */
import type { AgentEvent, FinishReason } from "./agent-events.js";
import type { TaintInput } from "./taint.js";
import type { Usage } from "./usage.js";
import type { ClientRequest, ClientToolCall } from "./client-request.js";

/** An image attached to a user message (vision models). */
export interface ImageInput {
  mime: string;
  /** base64 without the data: prefix */
  data: string;
}

/** One inbound message for a session. */
export interface InboundMessage {
  /** Source channel id: telegram | discord | gateway | api | cron | heartbeat | subagent | hook | ... */
  channel: string;
  /** Session key, built with `internal/session/keys.ts`. */
  sessionKey: string;
  /** Agent that answers; the routing/default agent when absent. */
  agentId?: string;
  text: string;
  images?: ImageInput[];
  sender?: { id: string; name?: string };
  /** Channel target replies and announcements for this session go to, e.g. `telegram:123`. */
  replyTarget?: string;
  /** Human description of the origin for the prompt ("Telegram DM from Ann"). */
  originLabel?: string;
  /**
   * Where this turn's approval requests go when that is not `replyTarget`: a live gateway
   * connection (`gateway:conn:<id>`), which only lasts as long as the socket and so is never stored
   * as the session's origin. Only that connection (or the owner) can settle them.
   */
  approvalTarget?: string;
  /**
   * Leave the owner's private files out of this turn: USER.md and MEMORY.md from the prompt,
   * memory_search and reads of those files from the tools (a group chat, a non-owner's DM, unless
   * the owner opted the chat in with `channels.<name>.private_context`).
   */
  withholdPrivate?: boolean;
  /** Model override for this turn only (`<provider>/<model>`). */
  model?: string;
  /** Minimal prompt (identity + HEARTBEAT.md): heartbeat and cron. */
  lightContext?: boolean;
  /** Stored as a system event (e.g. an async subagent result), not as something the user said. */
  systemEvent?: boolean;
  /** Call tree: set by subagents so traces and usage roll up. */
  parentRequestId?: string;
  depth?: number;
  /**
   * Do not persist a session (one-shot API chat, stateless /v1 calls). History is given inline; with
   * `continue` the history already ends with the client's tool results and no user message is added
   * (`text` is then unused).
   */
  ephemeral?: { history: EphemeralEntry[]; continue?: boolean };
  /** An API client's tools, tool choice, response format and sampling for this turn. */
  client?: ClientRequest;
  /**
   * A persistent turn's messages stored in its session before the user message, in the same commit:
   * a forked `/v1/responses` chain's earlier conversation, the client's results for the model's calls
   * to the client's functions (agent/stored-prelude.ts). With `continue` (the prelude then ends with
   * tool results) no user message is stored: the turn answers the stored history.
   */
  stored?: { prelude: EphemeralEntry[]; continue?: boolean };
  /**
   * Re-run a turn whose user message is already stored (a turn interrupted by a crash): nothing new is
   * appended and the turn keeps its request id, so its answer pairs with the stored message.
   */
  resume?: { sessionId: string; messageId: number; requestId: string };
  /**
   * Stored things this message's text comes from (a cron job's message, a subagent's result): a
   * label on any of them taints the turn from its first step (docs/security.md, "Labels follow the
   * data"). By identity: a job id, the session key whose answer is announced.
   */
  reads?: { jobs?: string[]; sessionKeys?: string[] };
  /** Extra system prompt text for this turn only. */
  extraSystem?: string;
  /** Housekeeping turn (the pre-compaction memory flush): its events are not broadcast on the bus. */
  silent?: boolean;
  /**
   * Untrusted input this message carries (a document, an image, a non-owner sender, a webhook
   * body): recorded as the session's taint in the commit that stores the message.
   */
  taint?: readonly TaintInput[];
  /** Restrict tools for this turn (names); undefined = the agent's policy. */
  toolFilter?: (name: string) => boolean;
  /**
   * Called once the message is accepted, inside the transaction that stores it, so what the caller
   * records here (an idempotency key) is durable exactly when the message is: a kill -9 can never keep
   * one without the other. It must not throw for a failure that should not refuse the message.
   */
  onAccepted?: (ids: { runId: string; requestId: string }) => void;
}

/** One message of an ephemeral turn's inline history. */
export type EphemeralEntry =
  | { role: "user" | "assistant" | "system"; content: string }
  | { role: "assistant"; content: string; tool_calls: ClientToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string; name?: string };

/** Outcome of a turn. */
export interface TurnResult {
  runId: string;
  requestId: string;
  sessionId: string;
  text: string;
  finishReason: FinishReason;
  usage: Usage;
  /** Usage summed over the turn's whole call tree (subagents included). */
  treeUsage: Usage;
  /** USD over the call tree; calls of a model without a price count at budgets.default_price. */
  treeCost: number;
  /** How many of the tree's calls had no price (then `treeCost` is an estimate); 0 when absent. */
  treeCostEstimatedCalls?: number;
  subCalls: number;
  model?: string;
  /** `retryAfterMs`: the upstream model's `Retry-After`, for doors that pass it on (429/503). */
  error?: { code: string; message: string; retryAfterMs?: number };
  userMessageId?: number;
  assistantMessageId?: number;
  /** With finishReason `tool_calls`: the client's functions the model called (the client runs them). */
  toolCalls?: ClientToolCall[];
}

/** A submitted turn. `result` never rejects: failures resolve with `finishReason: "error"`. */
export interface TurnHandle {
  runId: string;
  requestId: string;
  /** Resolves when the turn starts running (after earlier turns of the session finished). */
  started: Promise<void>;
  result: Promise<TurnResult>;
  abort(reason?: string): void;
}

/** Per-session facts for `/status`. */
export interface SessionInfo {
  sessionKey: string;
  sessionId: string;
  agentId: string;
  model: string;
  modelOverride?: string;
  messageCount: number;
  estimatedTokens: number;
  usage: Usage;
  createdAt: number;
  running: boolean;
  queued: number;
}

export interface AgentHost {
  /**
   * Queues a turn. Turns of one session run one at a time in arrival order; `onEvent` receives
   * every event of this turn. The user message is committed to the store before this returns.
   */
  submit(msg: InboundMessage, onEvent?: (e: AgentEvent) => void): TurnHandle;
  /** Aborts the running turn of a session (and drops nothing queued). Returns true if one was running. */
  abort(sessionKey: string): boolean;
  /** `/new`: starts a fresh session id under the key; the old one stays readable. */
  reset(sessionKey: string, reason?: string): { sessionId: string };
  /** `/compact [instructions]`. */
  compact(
    sessionKey: string,
    instructions?: string,
  ): Promise<{ summary: string; tokensBefore: number; tokensAfter: number }>;
  setSessionModel(sessionKey: string, model: string): void;
  clearSessionModel(sessionKey: string): void;
  resolveModel(sessionKey: string, agentId?: string): string;
  sessionInfo(sessionKey: string, agentId?: string): SessionInfo;
  /** Number of queued + running turns across all sessions. */
  queueDepth(): number;
  /** Waits for running turns to finish (shutdown drain), up to `ms`. */
  drain(ms: number): Promise<void>;
}
