/**
 * A lean HTTP client for the load generator: node:http with a keep-alive agent, so the client's own
 * cost per request stays well under a millisecond and does not pollute the daemon's figures.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";

const agent = new Agent({ keepAlive: true, maxSockets: 512 });

export interface PostResult {
  status: number;
  body: string;
  ms: number;
}

const tokens = new Map<string, string>();

/** Registers the gateway token of the daemon at `base` (http://host:port); requests to it carry it. */
export function setGatewayToken(base: string, token: string): void {
  tokens.set(new URL(base).origin, token);
}

/** `authorization` for a daemon URL whose token was registered, else nothing. */
export function authHeaders(url: string): Record<string, string> {
  const t = tokens.get(new URL(url).origin);
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** POSTs a JSON body and reads the whole answer. */
export function postJson(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<PostResult> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...authHeaders(url),
          ...headers,
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(parts).toString("utf8"),
            ms: performance.now() - t0,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** One non-streaming turn through the daemon's OpenAI-compatible API, in the persistent session `user`. */
export async function chatTurn(base: string, user: string, text: string): Promise<PostResult> {
  const r = await postJson(
    `${base}/v1/chat/completions`,
    JSON.stringify({ model: "familiar", user, messages: [{ role: "user", content: text }] }),
  );
  if (r.status !== 200) throw new Error(`turn failed: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return r;
}

/** Runs `total` jobs with at most `concurrency` in flight; `job(i)` gets the job index. */
export async function pool(
  total: number,
  concurrency: number,
  job: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++;
      await job(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}
