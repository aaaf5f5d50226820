/**
 * `GET /api/traces/{requestId}`: the whole call tree of the user message that request belongs to
 * (any request id of the tree works, e.g. the `X-Familiar-Request-Id` of a turn).
 */
import { listTraces, type TraceSort } from "../../agent/trace-list.js";
import { readTraceReport } from "../../agent/trace-report.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { apiError } from "./api-errors.js";
import type { ApiRoute } from "./api-route.js";

export function traceRoutes(api: ApiContext): ApiRoute[] {
  return [
    {
      // Recent turns: ?sort=newest|slowest|costliest&status=failed|ok|running&agent=&session=&limit=1..200
      method: "GET",
      pattern: "/api/traces",
      handler: ({ res, url }) => {
        const q = url.searchParams;
        const sort = q.get("sort") ?? "newest";
        if (sort !== "newest" && sort !== "slowest" && sort !== "costliest")
          throw apiError(
            400,
            "invalid_sort",
            `sort must be newest, slowest or costliest; got ${JSON.stringify(sort)}`,
          );
        const status = q.get("status") ?? undefined;
        if (status !== undefined && status !== "failed" && status !== "ok" && status !== "running")
          throw apiError(
            400,
            "invalid_status",
            `status must be failed, ok or running; got ${JSON.stringify(status)}`,
          );
        const limitRaw = q.get("limit") ?? "50";
        const limit = Number(limitRaw);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200)
          throw apiError(
            400,
            "invalid_limit",
            `limit must be an integer from 1 to 200; got ${JSON.stringify(limitRaw)}`,
          );
        const traces = listTraces(api.db, api.config(), {
          sort: sort as TraceSort,
          status,
          agent: q.get("agent") ?? undefined,
          session: q.get("session") ?? undefined,
          limit,
        });
        sendJson(res, 200, { traces });
      },
    },
    {
      method: "GET",
      pattern: "/api/traces/:requestId",
      handler: ({ res, params }) => {
        const id = params.requestId ?? "";
        const report = readTraceReport(api.db, id, api.config());
        if (!report) throw apiError(404, "trace_not_found", `no trace for request ${id}`);
        sendJson(res, 200, report);
      },
    },
  ];
}
