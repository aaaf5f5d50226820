/**
 * A fake OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 (node:http, port 0) for tests and
 * benchmarks. Vectors are deterministic: a bag of words (lower-cased, stop words dropped, a plural
 * `s` stripped), each word mapped through a small synonym table ("automobile" -> "car") to a fixed
 * sparse signed vector (feature hashing), summed and normalised. So texts that share words or synonyms land close
 * and unrelated texts land far apart. Like real models it is weak on exact codes: tokens containing
 * digits carry no meaning here (keyword search finds those).
 *
 * Counts requests and embedded inputs per model; `setDown(status)` makes every call fail until
 * `setDown(undefined)`. Answers `float` and `base64` encodings like api.openai.com.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeBilling } from "./fake-billing.js";

/** Words that mean the same to the fake model. */
export const SYNONYMS: Record<string, string> = {
  automobile: "car",
  vehicle: "car",
  auto: "car",
  journey: "trip",
  travel: "trip",
  vacation: "trip",
  holiday: "trip",
  physician: "doctor",
  medic: "doctor",
  home: "house",
  flat: "house",
  apartment: "house",
  puppy: "dog",
  hound: "dog",
  cash: "money",
  spend: "money",
  budget: "money",
  birthday: "born",
  allergic: "allergy",
  intolerant: "allergy",
  wife: "spouse",
  husband: "spouse",
  partner: "spouse",
  telephone: "phone",
  mobile: "phone",
};

const STOP = new Set(
  "a an the of to and or in on at for with me my i we our you your it its is are was were be been do does did what which who whom where when how about that this these those have has had from by as not no so can will would should could there their they them he she his her".split(
    " ",
  ),
);

/** The words the fake model "understands" in a text. */
export function meaningWords(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (/\d/.test(raw) || raw.length < 2 || STOP.has(raw)) continue;
    const w = raw.length > 3 && raw.endsWith("s") && !raw.endsWith("ss") ? raw.slice(0, -1) : raw;
    out.push(SYNONYMS[w] ?? w);
  }
  return out;
}

/** Feature hashing: each word sets a few signed dimensions, so distinct words are nearly orthogonal. */
function wordVector(word: string, dims: number): Float32Array {
  const v = new Float32Array(dims);
  const seed = createHash("sha256").update(word).digest();
  for (let k = 0; k < 8; k++) {
    const at = (seed.readUInt16BE(k * 2) % dims) | 0;
    v[at] = (v[at] ?? 0) + ((seed[16 + k] ?? 0) & 1 ? 1 : -1);
  }
  return v;
}

/** The fake model's embedding of `text` (unit length). */
export function fakeEmbedding(text: string, dims: number): Float32Array {
  const sum = new Float32Array(dims);
  const words = meaningWords(text);
  for (const w of words.length ? words : ["\u0000empty"]) {
    const v = wordVector(w, dims);
    for (let i = 0; i < dims; i++) sum[i] = (sum[i] ?? 0) + (v[i] ?? 0);
  }
  const norm = Math.hypot(...sum) || 1;
  return sum.map((x) => x / norm);
}

export interface FakeEmbeddingsOptions {
  /** Dimensions when the request names none; per model overrides in `modelDims`. Default 128. */
  dims?: number;
  modelDims?: Record<string, number>;
  /** Required bearer key, if any. */
  apiKey?: string;
  /** Bills each successful call of the models it names, per input token (fake-billing.ts). */
  billing?: FakeBilling;
}

export interface FakeEmbeddings {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Requests answered (successful or not), per model. */
  requests: Record<string, number>;
  /** Texts embedded successfully, per model. */
  inputs: Record<string, number>;
  /** Every text embedded, in order. */
  texts: string[];
  /** Makes every call fail with this HTTP status (undefined: back to normal). */
  setDown(status: number | undefined): void;
  /** Makes the next `count` calls fail with this HTTP status. */
  failNext(status: number, count?: number): void;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

function send(res: ServerResponse, status: number, payload: unknown): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Starts the fake on an ephemeral port. */
export async function startFakeEmbeddings(opts: FakeEmbeddingsOptions = {}): Promise<FakeEmbeddings> {
  let down: number | undefined;
  let billed = 0;
  const failures: number[] = [];
  const state = {
    requests: {} as Record<string, number>,
    inputs: {} as Record<string, number>,
    texts: [] as string[],
  };
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (req.method !== "POST" || url.pathname !== "/v1/embeddings")
        return send(res, 404, { error: { message: "not found", type: "invalid_request_error" } });
      if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`)
        return send(res, 401, {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        });
      const b = JSON.parse(await body(req)) as {
        model?: string;
        input?: unknown;
        dimensions?: number;
        encoding_format?: string;
      };
      const model = b.model ?? "";
      state.requests[model] = (state.requests[model] ?? 0) + 1;
      const fail = failures.shift() ?? down;
      if (fail !== undefined)
        return send(res, fail, {
          error: { message: "the embeddings service is down", type: "server_error" },
        });
      const inputs =
        typeof b.input === "string" ? [b.input] : Array.isArray(b.input) ? (b.input as unknown[]) : [];
      if (inputs.length === 0 || inputs.some((t) => typeof t !== "string"))
        return send(res, 400, {
          error: { message: "input must be a string or an array of strings", type: "invalid_request_error" },
        });
      const dims = b.dimensions ?? opts.modelDims?.[model] ?? opts.dims ?? 128;
      state.inputs[model] = (state.inputs[model] ?? 0) + inputs.length;
      state.texts.push(...(inputs as string[]));
      let tokens = 0;
      const data = (inputs as string[]).map((t, index) => {
        tokens += Math.max(1, Math.ceil(t.length / 4));
        const v = fakeEmbedding(t, dims);
        return {
          object: "embedding",
          index,
          embedding:
            b.encoding_format === "base64" ? Buffer.from(v.buffer).toString("base64") : Array.from(v),
        };
      });
      if (opts.billing?.bills(model))
        opts.billing.bill({
          id: `emb-fake${++billed}`,
          model,
          input: tokens,
          cached: 0,
          output: 0,
          reasoning: 0,
        });
      send(res, 200, { object: "list", data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
    })().catch((err: unknown) => send(res, 500, { error: { message: String(err), type: "server_error" } }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    ...state,
    setDown(status) {
      down = status;
    },
    failNext(status, count = 1) {
      for (let i = 0; i < count; i++) failures.push(status);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
