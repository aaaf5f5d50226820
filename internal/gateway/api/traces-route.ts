/**
 * `GET /api/traces/{requestId}`: the whole call tree of the user message that request belongs to
 * (any request id of the tree works, e.g. the `X-Familiar-Request-Id` of a turn).
 */
import { readTraceReport } from "../../agent/trace-report.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { apiError } from "./api-errors.js";
import type { ApiRoute } from "./api-route.js";

export function traceRoutes(api: ApiContext): ApiRoute[] {
  return [
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
