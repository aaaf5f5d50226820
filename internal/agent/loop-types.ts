/**
 * The agent loop's contract: its options, the hooks persistence, compaction and loop detection plug
 * in through, and its outcome (`runAgentLoop` in loop.ts).
 */
import type { FinishReason } from "../core/agent-events.js";
import type { ClientRequest } from "../core/client-request.js";
import type {
  BilledAttempt,
  ChatMessage,
  ModelClient,
  ModelRetry,
  ToolCall,
  Usage,
} from "../models/types.js";
import type { ToolContext, ToolResult, ToolSet } from "../tools/tool.js";
import type { PromptParts } from "./prompt-parts.js";

/** Verdict of a loop guard on one tool call (see internal/agent/loop-detection). */
export interface LoopGuardVerdict {
  verdict: "ok" | "warning" | "critical" | "breaker";
  message?: string;
}

export interface LoopGuard {
  beforeCall(call: { name: string; args: unknown }): LoopGuardVerdict;
  afterCall(call: { name: string; args: unknown }, result: string): void;
}

export interface LoopHooks {
  /**
   * Before every model call, after `beforeModelCall`: a message here stops the turn without the call
   * (a budget limit, internal/budgets); it becomes the turn's one error reply.
   */
  gate?(messages: ChatMessage[], iteration: number): { code: string; message: string } | undefined;
  /** Before every model call; may return replacement messages (pre-emptive compaction). */
  beforeModelCall?(messages: ChatMessage[], iteration: number): Promise<ChatMessage[] | void>;
  /** On a context-overflow error; returns compacted messages to retry with, or undefined to give up. */
  onContextOverflow?(messages: ChatMessage[], attempt: number): Promise<ChatMessage[] | undefined>;
  /** An assistant message is complete (with or without tool calls). */
  onAssistantMessage?(m: {
    content: string;
    toolCalls: ToolCall[];
    model?: string;
    provider?: string;
    finishReason: string;
    usage?: Usage;
  }): void;
  /** A tool result is ready (in call order of completion). */
  onToolResult?(m: { callId: string; name: string; content: string; isError: boolean }): void;
  /**
   * Usage of one model call. `cost` (USD) is the provider's own figure when it gave one (OpenRouter's
   * `usage.cost`, a LiteLLM cost header, claude-cli's `total_cost_usd`); otherwise the host prices the
   * call (models/call-cost.ts). `estimated`: the counts were estimated from the text.
   */
  onUsage?(u: {
    usage: Usage;
    provider: string;
    model: string;
    raw: unknown;
    cost?: number;
    estimated?: boolean;
    /** The provider's id of the call, for reconciling with its export. */
    callId?: string;
    /** How long the call took (ms, including retries after an overflow) and what its prompt held. */
    durationMs?: number;
    prompt?: PromptParts;
    /** Calls retried after a context overflow (each after a compaction). */
    overflowRetries?: number;
    /** The history was compacted just before this call. */
    compacted?: boolean;
  }): void;
  /** A model attempt failed and the router retries it or falls back (tracing). */
  onModelRetry?(r: ModelRetry): void;
  /** A failed attempt the provider had already counted (billed): recorded in the ledger. */
  onBilled?(b: BilledAttempt): void;
  /** Wraps one tool execution (tracing). */
  onToolCall?(call: ToolCall, run: () => Promise<ToolResult>): Promise<ToolResult>;
}

export interface LoopOptions {
  runId: string;
  model: ModelClient;
  modelRef?: string;
  tools: ToolSet;
  messages: ChatMessage[];
  signal: AbortSignal;
  maxIterations: number;
  maxTokens?: number;
  temperature?: number;
  toolContext: ToolContext;
  loopGuard?: LoopGuard;
  hooks?: LoopHooks;
  /**
   * An API client's request (`/v1`): its functions are offered beside the agent's tools (shadowing
   * same-named ones); a call to one ends the turn with finish reason `tool_calls` after the agent's
   * own calls of that step ran. `toolChoice` applies to the first call only (a forced choice on
   * every call would never let the loop end); `responseFormat` to every call.
   */
  client?: ClientRequest;
  /**
   * False for a model declared `vision: false`: images tools return are then only named in their
   * text results. Otherwise they follow the tool results as a user message with image parts (tool
   * messages carry text only in the chat API).
   */
  acceptsImages?: boolean;
}

export interface LoopOutcome {
  text: string;
  finishReason: FinishReason;
  usage: Usage;
  model?: string;
  iterations: number;
  error?: { code: string; message: string; retryAfterMs?: number };
  /** With finish reason `tool_calls`: the client's functions the model called. */
  toolCalls?: ToolCall[];
}
