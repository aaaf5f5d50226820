/**
 * Guards for writing into a session over `/api`.
 *
 * - An archived (compacted) session answers 308 with `Location` at the same sub-path of the live end
 *   of its successor chain, so standard HTTP clients (Node's fetch, curl -L) repeat the POST there with
 *   the body intact.
 * - A session that `/new` (or an idle reset) replaced is still readable but no longer the live session
 *   of its key; a write answers 409 `session_not_live` naming the live one, since the host always
 *   appends to the key's live session.
 */
import { latestSuccessor } from "../../agent/compaction/lineage.js";
import type { SessionRow } from "../../session/session-store.js";
import { HttpError } from "../http-util.js";
import type { ApiContext } from "./api-context.js";
import { apiError } from "./api-errors.js";

/** Path of a session's sub-resource, e.g. `sessionPath("main", sid, "/messages")`. */
export function sessionPath(agentId: string, sid: string, suffix = ""): string {
  return `/api/agents/${encodeURIComponent(agentId)}/sessions/${encodeURIComponent(sid)}${suffix}`;
}

/** Throws the 308 / 409 / 403 of the module doc unless `s` can take a write right now. */
export function assertLiveForWrite(api: ApiContext, agentId: string, s: SessionRow, suffix: string): void {
  if (s.archived_at !== null) {
    const next = latestSuccessor(api.db, s.id);
    if (next && next !== s.id) {
      const location = sessionPath(agentId, next, suffix);
      throw new HttpError(
        308,
        "session_archived",
        `session ${s.id} was compacted; its successor is ${next}`,
        { location },
      );
    }
    throw apiError(409, "session_archived", `session ${s.id} is archived and has no successor`);
  }
  const head = api.host().sessions.head(s.key);
  if (head && head.id !== s.id)
    throw apiError(
      409,
      "session_not_live",
      `session ${s.id} was replaced by ${head.id} (${s.key}); post to the live session`,
    );
  api.requireWritable(s);
}
