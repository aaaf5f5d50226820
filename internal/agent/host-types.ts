/**
 * The agent host's seams: what the daemon hands it (`AgentHostDeps`), the engines and compactor it
 * calls, and the usage row it records per model call. Kept apart from the host so engines and the
 * compactor can import them without importing the host.
 */
import type { AgentEvent } from "../core/agent-events.js";
import type { InboundMessage } from "../core/host.js";
import type { CoreContext } from "../runtime/context.js";
import type { ChatMessage, ModelClient, Usage } from "../models/types.js";
import type { ApprovalAnswer, ApprovalDecision, ApprovalRequest, ToolSet } from "../tools/tool.js";
import type { SessionRow } from "../session/session-store.js";
import type { AgentDef, AgentSource } from "./agents.js";
import type { LoopGuard, LoopOptions, LoopOutcome } from "./loop.js";
import type { BudgetBlock, Projection } from "../budgets/budget-guard.js";
import type { Payer } from "../budgets/spend.js";
import type { CostSource } from "../models/call-cost.js";

/** An engine runs one turn and yields the same events as the model loop (model, cli, claude-cli). */
export type Engine = (
  opts: LoopOptions & { agent: AgentDef; sessionKey: string; sessionId: string },
) => AsyncGenerator<AgentEvent, LoopOutcome>;

/** Compaction as the host needs it (implemented in internal/agent/compaction). */
export interface HostCompactor {
  /** Before a model call: may compact the session and return the new model messages. */
  beforeModelCall(args: CompactionArgs): Promise<ChatMessage[] | void>;
  /** On provider context overflow: compact and return messages to retry with. */
  onOverflow(args: CompactionArgs & { attempt: number }): Promise<ChatMessage[] | undefined>;
  /** On demand (`/compact`). */
  compactNow(args: {
    session: SessionRow;
    agent: AgentDef;
    modelRef: string | undefined;
    instructions?: string;
  }): Promise<{ summary: string; tokensBefore: number; tokensAfter: number; successorId: string }>;
}

export interface CompactionArgs {
  session: SessionRow;
  agent: AgentDef;
  modelRef: string | undefined;
  messages: ChatMessage[];
  system: string;
  runId: string;
  emit: (e: AgentEvent) => void;
}

export interface AgentHostDeps {
  ctx: CoreContext;
  model: ModelClient;
  /** Tools for an agent this turn; no tools when absent. */
  toolsFor?: (agent: AgentDef, msg: InboundMessage) => ToolSet;
  /** Extra prompt sections for an agent this turn (skills list, delegate targets). */
  skillsSection?: (agent: AgentDef, toolNames: readonly string[]) => string | undefined;
  /** Asks the owner (approvals); denied at once when absent. */
  requestApproval?: (
    target: string | undefined,
    sessionKey: string,
    req: ApprovalRequest,
    /** The asking turn: its abort withdraws the question. */
    turn?: { requestId: string; signal?: AbortSignal },
  ) => Promise<ApprovalDecision | ApprovalAnswer>;
  /** Records one model call's usage (the UsageTracker); a direct insert when absent. */
  recordUsage?: (rec: UsageRecord) => void;
  agentSources?: AgentSource[];
  loopGuard?: (agent: AgentDef) => LoopGuard | undefined;
  compactor?: HostCompactor;
  /** Non-model engines by name (`cli`, `claude-cli`). */
  engines?: Record<string, Engine>;
  /** Called when a session key is reset (`/new`), e.g. so a CLI engine drops its session. */
  onReset?: (sessionKey: string) => void;
  /**
   * Called after `/compact` of a session whose agent runs a CLI engine: the CLI keeps its own copy of
   * the conversation, so the engine drops it and starts its next session from the compacted store.
   */
  onCompacted?: (sessionKey: string) => void;
  /** Spending limits (internal/budgets): checked before each model call, told of each recorded one. */
  budget?: HostBudget;
  /** Prompt-injection containment: taint recorded at admission, shown in each turn's trace. */
  taint?: HostTaint;
}

/** Containment as the host needs it (internal/tools/taint/containment.ts). */
export interface HostTaint {
  /** Records a stored message's taint, in its admission commit. */
  admitted(sessionId: string, requestId: string, msg: InboundMessage): void;
  /** The session's taint sources (empty: clean). */
  sourcesOf(sessionId: string): readonly import("../core/taint.js").TaintSource[];
}

/** The budget guard as the host needs it (internal/budgets/budget-guard.ts). */
export interface HostBudget {
  /** `projection` may be a function: it is called only when a limit applies. */
  check(payer: Payer, projection: Projection | (() => Projection)): BudgetBlock | undefined;
  recorded(payer: Payer): void;
}

export interface UsageRecord {
  sessionId: string | null;
  sessionKey: string | null;
  agentId: string;
  provider: string;
  model: string;
  requestId: string;
  usage: Usage;
  /** The ledger figure (models/call-cost.ts) and how it was made. */
  cost: number;
  costSource: CostSource;
  /** What caused the call: turn, tool_loop, subagent, memory_flush, heartbeat, cron, failed. */
  kind: string;
  jobId?: string | null;
  callId?: string | null;
  /** Who pays: the channel, agent and session key of the call tree's root turn (internal/budgets). */
  channel?: string | null;
  payerAgent?: string | null;
  payerSession?: string | null;
}
