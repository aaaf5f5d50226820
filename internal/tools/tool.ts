/**
 * The tool interface. A tool declares a zod schema for its arguments (exported to the model as JSON
 * schema); the runner validates arguments before `execute` and turns every failure into an error
 * result the model sees, never a crashed turn.
 */
import type { z } from "zod";
import type { Logger } from "../log/logger.js";

/** Groups used by allow/deny lists (`group:fs`, ...). */
export type ToolGroup =
  "fs" | "exec" | "web" | "memory" | "messaging" | "cron" | "subagents" | "mcp" | "skills" | "time";

/** Outcome of an approval request. */
export type ApprovalDecision = "approved" | "denied" | "expired";

/** A decision with why (for the turn's trace): "no answer within 300s", the chat that answered. */
export interface ApprovalAnswer {
  decision: ApprovalDecision;
  reason?: string;
  /** The chat that answered (`telegram:123`); absent when the owner answered from the console or CLI. */
  via?: string;
}

export interface ApprovalRequest {
  /** What will happen, shown to the owner, e.g. the shell command. */
  summary: string;
  kind: string;
}

/** The part of the workspace a turn may not use (see {@link ToolContext.withheld}). */
export interface WithheldView {
  /** Why this turn may not use the workspace-relative real path `rel`; undefined when it may. */
  refusal(rel: string): string | undefined;
  /** Workspace-relative paths a command of this turn must not see (at the time of the call). */
  hidden(): readonly string[];
  /**
   * The workspace-relative folder this turn's commands work in and may write, when not the whole desk
   * (a shared chat's own desk: `desk/shared/<chat>`).
   */
  desk?: string;
}

/** Context given to every tool call. */
export interface ToolContext {
  sessionKey: string;
  sessionId: string;
  agentId: string;
  /** Absolute, real path of the workspace. */
  workspace: string;
  /** Channel target of the session's origin (`telegram:123`), if any. */
  replyTarget?: string;
  /**
   * Where this turn's approval requests go when not `replyTarget` (a live gateway connection).
   * A tool may ask the owner when either is set.
   */
  approvalTarget?: string;
  requestId: string;
  depth: number;
  logger: Logger;
  /** Asks the owner on the originating channel; resolves when decided or expired. Never hangs. */
  requestApproval(req: ApprovalRequest): Promise<ApprovalDecision>;
  /**
   * Runs `wait` (a wait for the owner) with the turn's global slot given back, so other sessions'
   * turns run meanwhile. Absent: the wait holds the slot (tools run outside a turn, tests).
   */
  parkWhile?<R>(wait: () => Promise<R>): Promise<R>;
  /** The turn's abort signal: a question asked under it is withdrawn when the turn ends. */
  signal?: AbortSignal;
  /**
   * The egress gate (prompt-injection containment): resolves when this session may connect to the
   * URL's host, throws a ToolError when not (the allowlist, or the owner said no). Tools that reach
   * the network call it for every hop, redirects included. Absent: no containment (tests, tools run
   * outside a turn).
   */
  egress?: (url: URL) => Promise<void>;
  /**
   * Workspace-relative paths a command of this session must not see (labelled data and the inbox,
   * while the session is clean: reading them needs a tool that taints). Set by containment.
   */
  sandboxMasks?: () => readonly string[];
  /**
   * What of the workspace this turn may not use (a shared chat: the owner's private files; see
   * agent/private-context.ts). Set: the file tools refuse what `refusal` names (by the real path they
   * would open), a sandboxed command has `hidden()` masked, and a command without the sandbox is
   * refused (nothing could keep the files from it).
   */
  withheld?: WithheldView;
  /**
   * Shows a one-line progress notice to whoever follows this turn (a `notice` event: the web chat,
   * the console, `/api` and `/chat/stream` streams). Set by the agent host; absent elsewhere.
   */
  notify?(kind: string, text: string): void;
  /**
   * Adds deferred tools' schemas to the rest of this turn's model calls (`load_tools`). Set by the
   * agent loop; absent elsewhere, where `load_tools` returns the schemas as text instead.
   */
  loadTools?(names: readonly string[]): void;
}

/** A tool's structured result. Plain strings are accepted as `{ content }`. */
export interface ToolResult {
  content: string;
  isError?: boolean;
  /**
   * Images the tool returned (an MCP tool's image content): shown to a model that accepts images
   * right after the tool results (the agent loop); `content` names them for the others.
   */
  images?: { mime: string; data: string }[];
  /**
   * What the tool read, by identity (workspace-relative files, transcript message ids): a label on
   * any of them taints the session (taint/data-labels.ts). A tool that reads stored data says so.
   */
  reads?: { files?: string[]; messageIds?: number[] };
  /** What the tool wrote, by identity: labelled with the session's taint when it is tainted. */
  writes?: { files?: string[]; jobs?: string[] };
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  /**
   * A few words for the `load_tools` list when the tool is deferred (`tools.deferred`), e.g.
   * "reminders and schedules". Defaults to the description's first clause.
   */
  hint?: string;
  group: ToolGroup;
  schema: S;
  /**
   * Raw JSON schema sent to the model instead of `z.toJSONSchema(schema)`; for tools whose schema
   * comes from elsewhere (MCP servers). `schema` still validates the arguments.
   */
  parameters?: Record<string, unknown>;
  execute(args: z.infer<S>, signal: AbortSignal, ctx: ToolContext): Promise<string | ToolResult>;
}

/** Helper that keeps the schema's type attached to `execute`. */
export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool<S> {
  return tool;
}

/** Error with a code that tools throw for expected failures; the message goes to the model. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

/**
 * What the agent loop needs from tools: the specs to send to the model and a way to run one call.
 * Implemented by the tool registry (`internal/tools/registry.ts`).
 */
export interface ToolSet {
  /**
   * Tool specs for the model (JSON schema parameters). Deferred tools (`tools.deferred`) are left
   * out unless named in `loaded`; while any is left out, the `load_tools` spec lists them.
   */
  specs(loaded?: ReadonlySet<string>): import("../models/types.js").ToolSpec[];
  /** Every tool this set can run, deferred ones included (skills check their requirements here). */
  names?(): string[];
  /**
   * Runs one call. Never throws: unknown tools, invalid arguments (naming the bad field), thrown
   * errors and aborts all come back as `{ isError: true }`. Results are size-capped.
   */
  execute(
    call: import("../models/types.js").ToolCall,
    signal: AbortSignal,
    ctx: ToolContext,
  ): Promise<ToolResult>;
}
