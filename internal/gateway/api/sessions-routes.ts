/**
 * Sessions over `/api`: create (with per-session compaction settings), list, read with the message
 * count, delete (cascades to messages), page through messages oldest first, compact on demand and
 * walk the compaction lineage. Any channel's session of the agent is reachable; writes to another
 * channel's session need `gateway.allow_channel_writes`.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { CompactionError, lineage } from "../../agent/compaction/lineage.js";
import { sessionKeys } from "../../session/keys.js";
import { modelChoiceProblem } from "../../models/model-choice.js";
import type { SessionRow } from "../../session/session-store.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { apiError, sessionNotFound } from "./api-errors.js";
import { lineageJson, messageJson, sessionJson, sessionMeta } from "./api-json.js";
import type { ApiRoute } from "./api-route.js";
import { intParam, limitParam, SessionPager, splitPage } from "./pagination.js";
import { assertLiveForWrite } from "./session-guards.js";

const titleSchema = z.string().trim().min(1, { error: "must not be empty" }).max(200);
const modelRefSchema = z.string().regex(/^[^/\s]+\/\S+$/, { error: "expected <provider>/<model>" });

const createBody = z
  .object({
    title: titleSchema.optional(),
    compact_strategy: z.enum(["auto", "manual", "off"]).optional(),
    compact_keep_last_n: z.number().int().min(0).max(200).optional(),
    compact_observation_mask: z.boolean().optional(),
    compact_summary_model: modelRefSchema.optional(),
  })
  .strict();

/** `null` clears a field. */
const patchBody = z
  .object({
    title: titleSchema.nullable().optional(),
    model_override: modelRefSchema.nullable().optional(),
    compact_strategy: z.enum(["auto", "manual", "off"]).nullable().optional(),
    compact_keep_last_n: z.number().int().min(0).max(200).nullable().optional(),
    compact_observation_mask: z.boolean().nullable().optional(),
    compact_summary_model: modelRefSchema.nullable().optional(),
  })
  .strict();

const compactBody = z.object({ instructions: z.string().max(4000).optional() }).strict();

const MAX_PAGE = 500;

const COMPACTION_STATUS: Record<string, number> = {
  SESSION_NOT_FOUND: 404,
  COMPACTION_OFF: 409,
  COMPACTION_BUSY: 409,
  NOTHING_TO_COMPACT: 409,
  COMPACT_BAD_OPTION: 400,
  SESSION_ARCHIVED: 409,
  COMPACTION_UNAVAILABLE: 503,
};

export function sessionRoutes(api: ApiContext): ApiRoute[] {
  const json = (s: SessionRow): Record<string, unknown> =>
    sessionJson(api.config(), s, api.host().sessions.stats(s.id).messages, api.writable(s));

  /** Deletes a session with its messages; undefined when it is already gone. */
  const remove = (s: SessionRow): { messages: number } | undefined => {
    const sessions = api.host().sessions;
    const messages = sessions.stats(s.id).messages;
    return sessions.delete(s.id) ? { messages } : undefined;
  };

  const pager = new SessionPager(api.db);
  const summaryOf = api.db.prepare<[string], { id: string }>(
    "SELECT id FROM compaction_summaries WHERE source_session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
  );

  return [
    {
      method: "POST",
      pattern: "/api/agents/:id/sessions",
      handler: async ({ req, res, params }) => {
        const agent = api.agent(params.id ?? "");
        const body = await api.body(req, createBody);
        const key = sessionKeys.gateway(agent.id, `api-${randomUUID()}`);
        const s = api.host().sessions.create(key, agent.id, {
          ...(body.compact_strategy ? { compactStrategy: body.compact_strategy } : {}),
          ...(body.compact_keep_last_n !== undefined ? { compactKeepLastN: body.compact_keep_last_n } : {}),
          ...(body.compact_observation_mask !== undefined
            ? { compactObservationMask: body.compact_observation_mask }
            : {}),
          ...(body.compact_summary_model ? { compactSummaryModel: body.compact_summary_model } : {}),
          ...(body.title ? { meta: { title: body.title } } : {}),
          origin: "api",
        });
        sendJson(res, 201, json(s), { location: `/api/agents/${agent.id}/sessions/${s.id}` });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions",
      handler: ({ res, url, params }) => {
        const agent = api.agent(params.id ?? "");
        const { rows, nextAfter } = pager.page(url, agent.id);
        sendJson(res, 200, {
          sessions: rows.map((r) => sessionJson(api.config(), r, r.message_count, api.writable(r))),
          next_after: nextAfter,
        });
      },
    },
    {
      // Every agent's live sessions in one list (a chat list for apps), most recently active first.
      method: "GET",
      pattern: "/api/sessions",
      handler: ({ res, url }) => {
        const { rows, nextAfter } = pager.page(url, undefined);
        sendJson(res, 200, {
          sessions: rows.map((r) => sessionJson(api.config(), r, r.message_count, api.writable(r))),
          next_after: nextAfter,
        });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid",
      handler: ({ res, params }) => sendJson(res, 200, json(api.session(params.id ?? "", params.sid ?? ""))),
    },
    {
      // The session's title, its model (`/model` over REST) and its compaction settings; `null` clears.
      method: "PATCH",
      pattern: "/api/agents/:id/sessions/:sid",
      handler: async ({ req, res, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        api.requireWritable(s);
        const body = await api.body(req, patchBody);
        const sessions = api.host().sessions;
        if (body.title !== undefined) {
          const meta = sessionMeta(s);
          if (body.title === null) delete meta.title;
          else meta.title = body.title;
          sessions.setMeta(s.id, meta);
        }
        if (body.model_override !== undefined) {
          const problem = body.model_override && modelChoiceProblem(api.config(), body.model_override);
          if (problem) throw apiError(400, "invalid_body", `model_override: ${problem}`, "model_override");
          sessions.setModelOverride(s.id, body.model_override);
        }
        if (
          body.compact_strategy !== undefined ||
          body.compact_keep_last_n !== undefined ||
          body.compact_observation_mask !== undefined ||
          body.compact_summary_model !== undefined
        ) {
          // Fields not in the body keep the session's own value; `null` falls back to the agent's.
          const pick = <T>(v: T | null | undefined, cur: T | undefined): T | undefined =>
            v === null ? undefined : v !== undefined ? v : cur;
          const strategy = pick(body.compact_strategy, s.compact_strategy ?? undefined);
          const keep = pick(body.compact_keep_last_n, s.compact_keep_last_n ?? undefined);
          const mask = pick(
            body.compact_observation_mask,
            s.compact_observation_mask === null ? undefined : s.compact_observation_mask === 1,
          );
          const summary = pick(body.compact_summary_model, s.compact_summary_model ?? undefined);
          sessions.setCompaction(s.id, {
            ...(strategy !== undefined ? { compactStrategy: strategy } : {}),
            ...(keep !== undefined ? { compactKeepLastN: keep } : {}),
            ...(mask !== undefined ? { compactObservationMask: mask } : {}),
            ...(summary !== undefined ? { compactSummaryModel: summary } : {}),
          });
        }
        sendJson(res, 200, json(sessions.get(s.id) ?? s));
      },
    },
    {
      method: "DELETE",
      pattern: "/api/agents/:id/sessions/:sid",
      handler: async ({ res, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        api.requireWritable(s);
        const host = api.host();
        // A turn running in the live session is stopped (no more model calls for a session that is
        // going away) and the delete waits for it in the session's queue, so the turn ends cleanly
        // (its stream gets `done`) instead of writing into a deleted session.
        const live = host.sessions.head(s.key)?.id === s.id;
        if (live) host.abort(s.key);
        const removed = await (live ? host.exclusive(s.key, () => remove(s)) : remove(s));
        if (!removed) throw sessionNotFound(s.id);
        sendJson(res, 200, { deleted: s.id, messages_deleted: removed.messages });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid/messages",
      handler: ({ res, url, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        const after = intParam(url, "after", 0, Number.MAX_SAFE_INTEGER);
        const limit = limitParam(url, 100, MAX_PAGE);
        // One extra row tells whether another page follows without a COUNT.
        const { page, more } = splitPage(api.host().sessions.page(s.id, after, limit + 1), limit);
        sendJson(res, 200, {
          session_id: s.id,
          messages: page.map(messageJson),
          next_after: more ? (page[page.length - 1]?.id ?? null) : null,
        });
      },
    },
    {
      method: "POST",
      pattern: "/api/agents/:id/sessions/:sid/compact",
      handler: async ({ req, res, params }) => {
        const agentId = params.id ?? "";
        const s = api.session(agentId, params.sid ?? "");
        assertLiveForWrite(api, agentId, s, "/compact");
        const body = await api.body(req, compactBody);
        let out: { summary: string; tokensBefore: number; tokensAfter: number };
        try {
          out = await api.host().compact(s.key, body.instructions);
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          if (err instanceof CompactionError || (typeof code === "string" && code in COMPACTION_STATUS))
            throw apiError(
              COMPACTION_STATUS[code as string] ?? 409,
              String(code).toLowerCase(),
              (err as Error).message,
            );
          throw err;
        }
        const successor = api.host().sessions.head(s.key);
        // A session is compacted at most once (it is archived after), so its summary row is unique.
        const summaryId = summaryOf.get(s.id)?.id ?? null;
        sendJson(res, 200, {
          source_session_id: s.id,
          successor_session_id: successor && successor.id !== s.id ? successor.id : null,
          summary_id: summaryId,
          summary_text: out.summary,
          summary: out.summary,
          tokens_before: out.tokensBefore,
          tokens_after: out.tokensAfter,
        });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid/lineage",
      handler: ({ res, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        const l = lineage(api.db, s.id);
        if (!l) throw sessionNotFound(s.id);
        sendJson(res, 200, lineageJson(l));
      },
    },
  ];
}
