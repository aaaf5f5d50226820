/**
 * The gateway's HTTP listener. One port serves everything: `/healthz` here; the gateway module
 * registers its routes (websocket, /v1, /api, web chat, hooks) through `route`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { requestUrl, sendError, sendJson, type HttpError } from "./http-util.js";

export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
) => Promise<boolean | void> | boolean | void;

export class HttpServer {
  readonly server: Server;
  private handlers: RouteHandler[] = [];
  private guards: ((req: IncomingMessage) => HttpError | undefined)[] = [];
  constructor(private healthz: () => { status: string; [k: string]: unknown }) {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 65_000;
  }

  /**
   * Adds a check that runs before every handler (not `/healthz`): an error it returns is sent as is
   * and no handler runs. The gateway's Host and Origin checks live here.
   */
  guard(fn: (req: IncomingMessage) => HttpError | undefined): void {
    this.guards.push(fn);
  }

  /** Adds a handler; handlers run in order until one returns true (handled). */
  route(h: RouteHandler): void {
    this.handlers.push(h);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req.url);
    if (!url) {
      sendJson(res, 400, {
        error: { code: "invalid_url", message: "the request target is not a valid path" },
      });
      return;
    }
    try {
      if (req.method === "GET" && url.pathname === "/healthz") {
        const h = this.healthz();
        // `warning` (a nearly full disk) still serves: 200, with the reason in the body.
        sendJson(res, h.status === "ok" || h.status === "warning" ? 200 : 503, h);
        return;
      }
      for (const g of this.guards) {
        const refused = g(req);
        if (refused) {
          // The body is not read; drained so the connection can carry the answer.
          req.resume();
          sendError(res, refused);
          return;
        }
      }
      for (const h of this.handlers) if (await h(req, res, url)) return;
      sendJson(res, 404, {
        error: { code: "not_found", message: `no route for ${req.method} ${url.pathname}` },
      });
    } catch (err) {
      if (!res.headersSent)
        sendJson(res, 500, { error: { code: "internal", message: (err as Error).message } });
      else res.destroy();
    }
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      const onErr = (err: Error): void => reject(err);
      this.server.once("error", onErr);
      this.server.listen(port, host, () => {
        this.server.off("error", onErr);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
