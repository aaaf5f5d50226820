/**
 * `status` and `cancel` of background tasks, shared by the `delegate` and `dispatch` tools: an async
 * delegation and a background dispatch are rows of the same task table, so either tool lists and
 * cancels both.
 */
import { ToolError } from "../../tools/tool.js";
import type { SubagentTaskManager } from "./task-manager.js";

/**
 * The session's recent tasks, or one task with its result. A task of another session is "not found":
 * a task id seen in one chat gives no access from another.
 */
export function taskStatusText(tasks: SubagentTaskManager, sessionKey: string, taskId?: string): string {
  if (!taskId) {
    const recent = tasks.recent(sessionKey);
    if (recent.length === 0) return "No background tasks for this session.";
    return recent
      .map(
        (t) =>
          `${t.id} ${t.agent_id} ${t.status}${t.announce_status === "failed" ? " (announcement failed)" : ""}`,
      )
      .join("\n");
  }
  const t = tasks.status(taskId);
  if (!t || t.origin_session_key !== sessionKey) throw new ToolError("TASK_NOT_FOUND", `no task ${taskId}`);
  const out = t.result ? `\nresult: ${t.result.slice(0, 4000)}` : "";
  return `task ${t.id}: agent ${t.agent_id}, status ${t.status}${t.error ? `, error: ${t.error}` : ""}${out}`;
}

/** Cancels a queued or running task of this session (another session's task is "not running"). */
export function cancelTaskText(
  tasks: SubagentTaskManager,
  sessionKey: string,
  taskId: string | undefined,
): string {
  if (!taskId) throw new ToolError("TASK_ID_REQUIRED", "task_id: required for cancel");
  if (tasks.status(taskId)?.origin_session_key !== sessionKey) return `task ${taskId} is not running`;
  return tasks.cancel(taskId) ? `task ${taskId} cancelled` : `task ${taskId} is not running`;
}
