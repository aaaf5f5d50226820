/**
 * What caused a model call, for its ledger row (`usage.kind`, `usage.job_id`): so a day's cost is
 * explained call by call (docs/costs.md, "Causes"). Read from the turn that made the call: its
 * channel (cron, heartbeat, the memory flush's `compaction`, a subagent), its depth, and which call of
 * the turn it is (the first answers the message; the later ones follow tool results).
 */
import type { InboundMessage } from "../core/host.js";
import { parseSessionKey } from "../session/keys.js";

/** A call's cause as stored in the ledger. */
export interface CallCause {
  kind: string;
  jobId: string | null;
}

/** The cause of the `callIndex`-th (0-based) model call of a turn for `msg` at `depth`. */
export function causeOf(msg: InboundMessage, depth: number, callIndex: number): CallCause {
  if (msg.channel === "cron") return { kind: "cron", jobId: cronJobOf(msg) };
  if (msg.channel === "heartbeat") return { kind: "heartbeat", jobId: null };
  if (msg.channel === "compaction") return { kind: "memory_flush", jobId: null };
  if (msg.channel === "subagent" || depth > 0) return { kind: "subagent", jobId: null };
  return { kind: callIndex === 0 ? "turn" : "tool_loop", jobId: null };
}

/** The job id of a cron turn: its isolated session's key, else the origin label the runner sets. */
function cronJobOf(msg: InboundMessage): string | null {
  const p = parseSessionKey(msg.sessionKey);
  if (p.kind === "cron") return p.jobId;
  return /^scheduled job "([^"]+)"/.exec(msg.originLabel ?? "")?.[1] ?? null;
}
