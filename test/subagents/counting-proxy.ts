/**
 * A pass-through HTTP proxy on 127.0.0.1 in front of the fake OpenAI server that measures how many
 * chat requests are in flight at once, per model: a request counts from its arrival until its
 * response has been fully sent. This is how tests measure (not assume) a concurrency limit.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface CountingProxy {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Highest number of simultaneous in-flight requests seen for a model. */
  peak(model: string): number;
  /** Requests in flight now for a model. */
  inFlight(model: string): number;
  resetPeaks(): void;
  close(): Promise<void>;
}

export async function startCountingProxy(targetBaseUrl: string): Promise<CountingProxy> {
  const target = new URL(targetBaseUrl);
  const now = new Map<string, number>();
  const peaks = new Map<string, number>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const body = Buffer.concat(parts);
      let model = "";
      try {
        const parsed = JSON.parse(body.toString("utf8")) as { model?: unknown };
        if (typeof parsed.model === "string") model = parsed.model;
      } catch {
        /* not a chat request */
      }
      const n = (now.get(model) ?? 0) + 1;
      now.set(model, n);
      peaks.set(model, Math.max(peaks.get(model) ?? 0, n));
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        now.set(model, (now.get(model) ?? 1) - 1);
      };
      res.once("close", finish);
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host },
        },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      // A client that goes away aborts the upstream request too (so a "hang" step ends).
      res.once("close", () => up.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    peak: (m) => peaks.get(m) ?? 0,
    inFlight: (m) => now.get(m) ?? 0,
    resetPeaks: () => peaks.clear(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
