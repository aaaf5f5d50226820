/**
 * The `/api` surface (docs/api.md): a small method + path-pattern router mounted on the gateway's HTTP
 * listener. Every request needs the gateway token (the gateway's own auth and rate limit); errors
 * answer `{error:{code,message,field?}}`.
 */
import { sessionExtraRoutes } from "./session-extras-routes.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import { decodePathSegment, HttpError, toHttpError } from "../http-util.js";
import { requireJsonBody } from "../request-guard.js";
import type { GatewayRuntime } from "../runtime.js";
import { ApiContext } from "./api-context.js";
import { apiError, sendApiError } from "./api-errors.js";
import { agentRoutes } from "./agents-routes.js";
import { sessionRoutes } from "./sessions-routes.js";
import { turnRoutes } from "./turn-routes.js";
import { traceRoutes } from "./traces-route.js";
import type { ApiRoute } from "./api-route.js";
import { fileRoutes } from "./files-route.js";

export type { ApiRequest, ApiRoute } from "./api-route.js";

interface Compiled extends ApiRoute {
  re: RegExp;
  names: string[];
}

function compile(r: ApiRoute): Compiled {
  const names: string[] = [];
  const src = r.pattern
    .split("/")
    .map((seg) => {
      if (!seg.startsWith(":")) return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      names.push(seg.slice(1));
      return "([^/]+)";
    })
    .join("/");
  return { ...r, re: new RegExp(`^${src}/?$`), names };
}

/** Builds the `/api` route handler for `HttpServer.route`; returns true for every `/api` request. */
export function apiRoutes(rt: GatewayRuntime) {
  const api = new ApiContext(rt);
  const routes = [
    ...agentRoutes(api),
    ...sessionRoutes(api),
    ...sessionExtraRoutes(api),
    ...turnRoutes(api),
    ...traceRoutes(api),
    ...fileRoutes(api),
  ].map(compile);
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    const path = url.pathname;
    if (path !== "/api" && !path.startsWith("/api/")) return false;
    try {
      const denied = await rt.authorize(req);
      if (denied) throw denied;
      const allowed: string[] = [];
      for (const r of routes) {
        const m = r.re.exec(path);
        if (!m) continue;
        if (r.method !== req.method) {
          allowed.push(r.method);
          continue;
        }
        const params: Record<string, string> = {};
        r.names.forEach((n, i) => (params[n] = decodePathSegment(m[i + 1] ?? "")));
        // JSON routes take JSON only: a cross-site "simple request" (text/plain, a form) is 415.
        if (req.method !== "GET" && req.method !== "DELETE") requireJsonBody(req);
        await r.handler({ req, res, url, params });
        return true;
      }
      if (allowed.length)
        throw new HttpError(405, "method_not_allowed", `use ${allowed.join(", ")} for ${path}`, {
          allow: allowed.join(", "),
        });
      throw apiError(404, "not_found", `no route for ${req.method} ${path}`);
    } catch (err) {
      const e = toHttpError(err);
      // An unread body (e.g. before a 308) is drained so the connection stays usable.
      req.resume();
      if (!res.headersSent) sendApiError(res, e);
      else res.end();
      return true;
    }
  };
}
