/**
 * Agents over `/api`: list and read every agent with its source (config, workspace file, API, built-in),
 * create, edit and delete API agents (stored in SQLite; delete cascades to their sessions and
 * messages), the template catalog, and the one-shot chat that stores nothing.
 */
import { z } from "zod";
import { RESERVED_AGENT_KEYS } from "../../agent/agents.js";
import { AGENT_TEMPLATES, findTemplate } from "../../agent/catalog/templates.js";
import { apiAgentProblem } from "../../agent/catalog/api-agent-check.js";
import { AGENT_NAME_RE, fileAgentSchema } from "../../agent/catalog/file-agents.js";
import type { AgentConfig } from "../../config/schema.js";
import { apiAgentWindowWarnings, withWarnings } from "./agent-window-check.js";
import type { FrontDeskEntry } from "../../inbound/front-desk.js";
import { usageHeaders } from "../openai-api.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { apiError, fromZod } from "./api-errors.js";
import { agentJson, turnTotalsJson } from "./api-json.js";
import type { ApiRoute } from "./api-route.js";
import { pageById } from "./pagination.js";
import { SseWriter, turnEventForwarder } from "./sse.js";
import { chunkEventForwarder, chunkFinish, streamVocabulary } from "./chunk-vocabulary.js";
import { turnFailure } from "./turn-errors.js";

const templateBody = z
  .object({
    templateId: z.string().min(1),
    /** The new agent's id; the template id when absent. */
    name: z
      .string()
      .regex(AGENT_NAME_RE, { error: "expected a URL-safe name of letters, digits, _ or -" })
      .optional(),
    model: z.string().optional(),
  })
  .strict();

const chatBody = z
  .object({
    message: z.string().min(1, { error: "must not be empty" }),
    history: z
      .array(z.object({ role: z.enum(["user", "assistant"]), content: z.string() }).strict())
      .default([]),
  })
  .strict();

/** The one-shot chat as the front desk takes it: nothing stored, the history inline. */
function oneShot(agentId: string, body: z.infer<typeof chatBody>): FrontDeskEntry {
  return {
    channel: "api",
    agentId,
    session: { gateway: "api-oneshot" },
    text: body.message,
    originLabel: "REST API (one-shot)",
    ephemeral: { history: body.history },
  };
}

export function agentRoutes(api: ApiContext): ApiRoute[] {
  const apiAgents = () => api.agentParts().apiAgents;

  /** 409 when any source already defines `id`; 400 for reserved keys. */
  const assertFree = (id: string, field: string): void => {
    if (RESERVED_AGENT_KEYS.has(id))
      throw apiError(400, "invalid_body", `${field}: "${id}" is reserved`, field);
    const existing = api.agents().find((a) => a.id === id);
    if (existing)
      throw apiError(409, "agent_exists", `agent "${id}" already exists (source: ${existing.source})`, field);
  };

  /** What an API client may not set, though config.yaml may (api-agent-check.ts). */
  const assertApiSafe = (def: AgentConfig): void => {
    const p = apiAgentProblem(def);
    if (p) throw apiError(400, "invalid_body", p.message, p.field);
  };

  const create = (id: string, def: AgentConfig): Record<string, unknown> => {
    assertApiSafe(def);
    const warnings = apiAgentWindowWarnings(api.config(), id, def);
    if (!apiAgents().create(id, def))
      throw apiError(409, "agent_exists", `agent "${id}" already exists`, "name");
    return withWarnings(agentJson(api.agent(id)), warnings);
  };

  return [
    {
      method: "GET",
      pattern: "/api/agents",
      // Config agents first (in config order), then the built-in default, workspace files and API
      // agents (oldest first); paged with `limit` (1-500, default 100) and `after` (last id seen).
      handler: ({ res, url }) => {
        const def = api.config().agents.default;
        const { page, nextAfter } = pageById(api.agents(), url, 100, 500);
        sendJson(res, 200, { default: def, agents: page.map(agentJson), next_after: nextAfter });
      },
    },
    {
      method: "POST",
      pattern: "/api/agents",
      handler: async ({ req, res }) => {
        const body = await api.body(req, fileAgentSchema);
        assertFree(body.name, "name");
        sendJson(res, 201, create(body.name, body));
      },
    },
    {
      method: "GET",
      pattern: "/api/agent-templates",
      handler: ({ res }) => sendJson(res, 200, { templates: AGENT_TEMPLATES }),
    },
    {
      method: "POST",
      pattern: "/api/agents/from-template",
      handler: async ({ req, res }) => {
        const body = await api.body(req, templateBody);
        const t = findTemplate(body.templateId);
        if (!t)
          throw apiError(
            404,
            "template_not_found",
            `no template "${body.templateId}" (known: ${AGENT_TEMPLATES.map((x) => x.id).join(", ")})`,
            "templateId",
          );
        const id = body.name ?? t.id;
        assertFree(id, body.name ? "name" : "templateId");
        const parsed = fileAgentSchema.safeParse({
          name: id,
          description: t.description,
          system_prompt: t.system_prompt,
          ...(t.temperature !== undefined ? { temperature: t.temperature } : {}),
          ...(t.tools ? { tools: t.tools } : {}),
          ...(body.model ? { model: body.model } : {}),
        });
        if (!parsed.success) throw fromZod(parsed.error);
        sendJson(res, 201, { ...create(id, parsed.data), template: { id: t.id, name: t.name } });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id",
      handler: ({ res, params }) => sendJson(res, 200, agentJson(api.agent(params.id ?? ""))),
    },
    {
      method: "PATCH",
      pattern: "/api/agents/:id",
      handler: async ({ req, res, params }) => {
        const id = params.id ?? "";
        const agent = api.agent(id);
        if (agent.source !== "api")
          throw apiError(
            403,
            "agent_read_only",
            `agent "${id}" is defined in ${agent.source.startsWith("file:") ? agent.source.slice(5) : agent.source}; only API agents can be changed here`,
          );
        const patch = await api.body(req, z.record(z.string(), z.unknown()));
        if (patch.name !== undefined && patch.name !== id)
          throw apiError(400, "invalid_body", "name: an agent cannot be renamed", "name");
        const { id: _id, source: _source, ...current } = agent;
        const merged: Record<string, unknown> = { ...current, name: id };
        // `null` removes a field (back to its default).
        for (const [k, v] of Object.entries(patch)) {
          if (v === null) delete merged[k];
          else merged[k] = v;
        }
        const parsed = fileAgentSchema.safeParse(merged);
        if (!parsed.success) throw fromZod(parsed.error);
        assertApiSafe(parsed.data);
        const warnings = apiAgentWindowWarnings(api.config(), id, parsed.data);
        apiAgents().update(id, parsed.data);
        sendJson(res, 200, withWarnings(agentJson(api.agent(id)), warnings));
      },
    },
    {
      method: "DELETE",
      pattern: "/api/agents/:id",
      handler: async ({ res, params }) => {
        const id = params.id ?? "";
        const agent = api.agent(id);
        if (agent.source !== "api")
          throw apiError(
            403,
            "agent_read_only",
            `agent "${id}" comes from ${agent.source.startsWith("file:") ? agent.source.slice(5) : agent.source}; only API agents can be deleted here`,
          );
        const sessions =
          api.db
            .prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM sessions WHERE agent_id = ?")
            .get(id)?.n ?? 0;
        // Turns running in the agent's sessions are stopped and waited for (in their session queues),
        // so they end cleanly instead of writing into deleted sessions.
        const host = api.host();
        const running = new Set<string>();
        for (const s of host.sessions.listByAgent(id, Number.MAX_SAFE_INTEGER))
          if (!running.has(s.key) && host.abort(s.key)) running.add(s.key);
        await Promise.all([...running].map((key) => host.exclusive(key, () => undefined)));
        apiAgents().delete(id);
        sendJson(res, 200, { deleted: id, sessions_deleted: sessions });
      },
    },
    {
      method: "POST",
      pattern: "/api/agents/:id/chat",
      handler: async ({ req, res, params }) => {
        const agent = api.agent(params.id ?? "");
        const body = await api.body(req, chatBody);
        api.checkModel(agent);
        const handle = api.rt.turnIdempotency.admit(api.desk(), {
          door: "/api/chat",
          req,
          body,
          entry: oneShot(agent.id, body),
        });
        // Nothing is stored, so a caller that went away has nobody left to answer: stop the turn.
        res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
        const r = await handle.result;
        if (r.finishReason === "error") throw turnFailure(r);
        sendJson(
          res,
          200,
          {
            agent_id: agent.id,
            reply: r.text,
            finish_reason: r.finishReason,
            model: r.model ?? null,
            ...turnTotalsJson(r),
          },
          usageHeaders(r),
        );
      },
    },
    {
      // The one-shot turn as a stream: the `/api` stream events without `user-message` (nothing is
      // stored), ending in `done` ({reply, finish_reason, model, totals}) or `error`; with
      // `?vocabulary=chunks`, the chunk vocabulary as on the session stream (chunk-vocabulary.ts).
      method: "POST",
      pattern: "/api/agents/:id/chat/stream",
      handler: async ({ req, res, url, params }) => {
        const vocabulary = streamVocabulary(url);
        const agent = api.agent(params.id ?? "");
        const body = await api.body(req, chatBody);
        api.checkModel(agent);
        const sse = new SseWriter(res);
        const chunks = vocabulary === "chunks" ? chunkEventForwarder(sse) : undefined;
        const handle = api.rt.turnIdempotency.admit(api.desk(), {
          door: "/api/chat/stream",
          req,
          body,
          entry: oneShot(agent.id, body),
          onEvent: chunks ? chunks.forward : turnEventForwarder(sse),
        });
        sse.open({ "x-familiar-request-id": handle.requestId });
        res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
        const r = await handle.result;
        if (chunks) {
          chunks.close();
          const failure = r.finishReason === "error" ? turnFailure(r) : undefined;
          chunkFinish(
            sse,
            r,
            { agentId: agent.id, question: body.message },
            failure ? { code: failure.code, message: failure.message } : undefined,
          );
          sse.end();
          return;
        }
        const totals = { agent_id: agent.id, model: r.model ?? null, ...turnTotalsJson(r) };
        if (r.finishReason === "error") {
          const e = turnFailure(r);
          sse.send("error", { error: { code: e.code, message: e.message }, ...totals });
        } else sse.send("done", { reply: r.text, finish_reason: r.finishReason, ...totals });
        sse.end();
      },
    },
  ];
}
