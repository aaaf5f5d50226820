/** The shape of one `/api` route and of the request its handler receives (see api-router.ts). */
import type { IncomingMessage, ServerResponse } from "node:http";

/** One matched request. `params` holds the decoded `:name` segments of the pattern. */
export interface ApiRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
}

export interface ApiRoute {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** e.g. `/api/agents/:id/sessions/:sid` */
  pattern: string;
  handler: (r: ApiRequest) => Promise<void> | void;
}
