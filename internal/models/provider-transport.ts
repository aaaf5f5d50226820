/**
 * The HTTP side of the OpenAI-compatible provider: one shared undici dispatcher (a keep-alive pool
 * per origin, loaded on the first call), the completions endpoint and the request headers, each
 * built the way the `openai` SDK over `fetch` built them so providers see the same request.
 */
import type { Dispatcher } from "undici";
import { ProviderConnectionError } from "./sse-call.js";

/** Whether Node was told to route fetch through the proxy environment variables. */
function useEnvProxy(): boolean {
  const v = process.env.NODE_USE_ENV_PROXY;
  return (
    v === "1" ||
    v === "true" ||
    process.execArgv.includes("--use-env-proxy") ||
    /(^|\s)--use-env-proxy(\s|$)/.test(process.env.NODE_OPTIONS ?? "")
  );
}

/** The shared keep-alive pool (one per origin inside undici's Agent) and undici's header parser. */
export interface Transport {
  dispatcher: Dispatcher;
  parseHeaders: (raw: Buffer[]) => Record<string, string | string[] | undefined>;
}
let transport: Promise<Transport> | undefined;
/** The part of undici this file uses. */
interface Undici {
  Agent: typeof import("undici").Agent;
  EnvHttpProxyAgent: typeof import("undici").EnvHttpProxyAgent;
  util: { parseHeaders: (raw: Buffer[]) => Record<string, string | string[]> };
}
export const loadTransport = (): Promise<Transport> =>
  (transport ??= import("undici").then((mod) => {
    // undici is CommonJS: Node exposes its exports as named ones, the esbuild bundle only as `default`.
    const u = ("Agent" in mod ? mod : (mod as { default: unknown }).default) as Undici;
    // HTTP/1.1 keep-alive, no pipelining: a streamed answer holds its connection for seconds, and a
    // request queued behind it on the same socket would wait for all of it.
    const opts = { pipelining: 1 };
    return {
      // fetch honoured HTTP_PROXY / HTTPS_PROXY / NO_PROXY when Node was asked to (NODE_USE_ENV_PROXY=1
      // or --use-env-proxy); so does this.
      dispatcher: useEnvProxy() ? new u.EnvHttpProxyAgent(opts) : new u.Agent(opts),
      parseHeaders: (raw) => u.util.parseHeaders(raw),
    };
  }));

/**
 * Ports `fetch` refuses to connect to (the Fetch standard's "bad port" list). The SDK went through
 * fetch, so a base_url on one of them failed with "bad port" and a hint to move the server; it still
 * does, rather than sending a prompt to a port that belongs to another protocol.
 */
const BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Where a provider's completions go: origin, and path with base_url's query (as the SDK built it). */
export function endpointOf(baseUrl: string): { origin: string; path: string } {
  const u = new URL(baseUrl);
  // As fetch did (and the error classifier words): refused before any connection is made.
  if (u.username || u.password)
    throw new ProviderConnectionError("Connection error.", {
      cause: new TypeError(`Request cannot be constructed from a URL that includes credentials: ${baseUrl}`),
    });
  if (u.port !== "" && BAD_PORTS.has(Number(u.port)))
    throw new ProviderConnectionError("Connection error.", { cause: new Error("bad port") });
  const base = u.pathname.endsWith("/") ? u.pathname.slice(0, -1) : u.pathname;
  return { origin: u.origin, path: `${base}/chat/completions${u.search}` };
}

/**
 * Request headers, built once per provider. The SDK sent these (plus its `x-stainless-*` telemetry),
 * including `OpenAI-Organization` / `OpenAI-Project` from `OPENAI_ORG_ID` / `OPENAI_PROJECT_ID`;
 * configured headers override all but the content type, as they did.
 */
export function headersOf(
  apiKey: string | undefined,
  configured: Record<string, string> | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const headers: Record<string, string> = {
    accept: "application/json",
    "user-agent": "familiar",
    // Local servers (Ollama, llama.cpp) need no key; the SDK insisted on one, so "no-key" stays.
    authorization: `Bearer ${apiKey ?? "no-key"}`,
  };
  if (env.OPENAI_ORG_ID) headers["openai-organization"] = env.OPENAI_ORG_ID;
  if (env.OPENAI_PROJECT_ID) headers["openai-project"] = env.OPENAI_PROJECT_ID;
  for (const [k, v] of Object.entries(configured ?? {})) headers[k.toLowerCase()] = v;
  headers["content-type"] = "application/json";
  return headers;
}
