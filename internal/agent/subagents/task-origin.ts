/**
 * Where a delegated task comes from: the calling turn's request, session, agent and chat, so the
 * task's call tree, its announcement and its replies go back to the right place. Shared by
 * `delegate` and `dispatch`.
 */
import type { ToolContext } from "../../tools/tool.js";

/** The origin fields of a task request, from the tool call that starts it. */
export function taskOrigin(tctx: ToolContext, depth: number) {
  return {
    depth,
    parentRequestId: tctx.requestId,
    originSessionKey: tctx.sessionKey,
    originAgentId: tctx.agentId,
    // A shared chat's view (agent/private-context.ts) is inherited by everything it starts.
    ...(tctx.withheld ? { withholdPrivate: true } : {}),
    ...(tctx.replyTarget
      ? { replyTarget: tctx.replyTarget, originChannel: tctx.replyTarget.split(":")[0] ?? "" }
      : {}),
  };
}
