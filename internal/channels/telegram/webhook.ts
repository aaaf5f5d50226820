/**
 * Webhook mode: a small HTTP server for Telegram's POSTs. The `X-Telegram-Bot-Api-Secret-Token`
 * header must equal `webhook.secret` (anything else is 401). The update is stored before the 200
 * goes back, so Telegram redelivers it when we fail; duplicates are dropped by update id.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Update } from "grammy/types";
import type { Logger } from "../../log/logger.js";

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;

/** Constant-time comparison, so the secret cannot be guessed byte by byte from response times. */
function sameSecret(got: string | string[] | undefined, want: string): boolean {
  if (typeof got !== "string") return false;
  const a = Buffer.from(got);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function startWebhook(
  cfg: { url: string; secret: string; listen: string },
  onUpdate: (u: Update) => void,
  logger: Logger,
): Promise<WebhookServer> {
  const path = new URL(cfg.url).pathname || "/";
  const idx = cfg.listen.lastIndexOf(":");
  const host = idx > 0 ? cfg.listen.slice(0, idx) : "127.0.0.1";
  const port = Number(idx >= 0 ? cfg.listen.slice(idx + 1) : cfg.listen);
  const server: Server = createServer((req, res) => {
    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== path) {
      res.writeHead(404).end();
      return;
    }
    if (!sameSecret(req.headers["x-telegram-bot-api-secret-token"], cfg.secret)) {
      logger.warn("telegram webhook: request with a wrong secret token refused");
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on("end", () => {
      try {
        const u = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Update;
        if (typeof u.update_id !== "number") throw new Error("no update_id");
        onUpdate(u);
        res.writeHead(200).end();
      } catch (err) {
        logger.warn({ err: (err as Error).message }, "telegram webhook: bad update refused");
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
