/**
 * Which sessions a subagent task's work ran in: the names an announcement gives the owner and the
 * model, and the sessions it reads (their taint comes with the result). Pure: keys from ids and rows.
 */
import { sessionKeys } from "../../session/keys.js";
import type { TaskRow } from "./task-types.js";

/** The `agent_id` of a background dispatch's task row (no agent is named `dispatch`: it is a tool). */
export const DISPATCH_LABEL = "dispatch";

/** The session a delegated run (an async task, one task of a dispatch graph) runs in. */
export function taskSessionKey(agentId: string, taskId: string): string {
  return sessionKeys.dm(agentId, "subagent", taskId);
}

/** The sessions a task's work ran in: a dispatch's recorded list, a delegation's own session. */
export function taskSessions(row: Pick<TaskRow, "agent_id" | "id" | "sessions">): string[] {
  if (row.agent_id !== DISPATCH_LABEL) return [taskSessionKey(row.agent_id, row.id)];
  try {
    const v: unknown = JSON.parse(row.sessions ?? "[]");
    return Array.isArray(v) ? v.filter((k): k is string => typeof k === "string") : [];
  } catch {
    return [];
  }
}
