/**
 * The request side of `POST /v1/chat/completions` (issue 34): every field a client sends is honoured
 * or refused with a 400 that names it; nothing is silently ignored.
 *
 * Honoured: `model`, `messages` (system/developer, user with text and data: images, assistant with
 * `tool_calls`, `tool` results), `stream`, `stream_options.include_usage`, `user`, `tools`
 * (functions), `tool_choice`, `parallel_tool_calls`, `response_format` (text, json_object,
 * json_schema), `temperature`, `max_tokens` / `max_completion_tokens`, `n` = 1, and the sampling
 * fields at their defaults (`top_p` 1, `frequency_penalty` 0, `presence_penalty` 0, `logprobs`
 * false, `store` false). `null` is the same as absent (several SDKs send it).
 *
 * Over 300 lines on purpose: the contract is that every field is honoured or refused by name, so the
 * list of known fields and the parser of each field stay together where one review can check that
 * none is left out.
 */
import type {
  ClientRequest,
  ClientTool,
  ClientToolCall,
  ResponseFormat,
  ToolChoice,
} from "../core/client-request.js";
import type { EphemeralEntry, ImageInput } from "../core/host.js";
import { HttpError } from "./http-util.js";

/** One tool result a client sent; `param` names its field for errors (`messages.3.tool_call_id`). */
export interface ClientResult {
  callId: string;
  content: string;
  param: string;
}

/** A parsed, valid chat request. */
export interface ChatRequest {
  stream: boolean;
  includeUsage: boolean;
  /** The persistent session's name (`user` or `X-Familiar-Session`), when one is asked for. */
  sessionRaw?: string;
  /** The last user message (empty with `continue`). */
  text: string;
  images: ImageInput[];
  system: string[];
  /** Earlier messages of a stateless request. */
  history: EphemeralEntry[];
  /** The request ends with tool results: the model answers them, no new user message. */
  continue: boolean;
  /** In a session: the trailing tool results, which must answer the session's pending calls. */
  results?: ClientResult[];
  client?: ClientRequest;
}

export function bad(message: string, param?: string): HttpError {
  return new HttpError(400, "invalid_request", message, {}, param);
}

const HANDLED = new Set(["model", "messages", "stream", "stream_options", "user"]);
/** Fields accepted only at the value that changes nothing (the OpenAI default). */
const DEFAULTS: Record<string, unknown> = {
  n: 1,
  top_p: 1,
  frequency_penalty: 0,
  presence_penalty: 0,
  logprobs: false,
  store: false,
};
/** Fields that ask something of the model itself (a CLI-engine agent cannot honour them). */
export const CLIENT_FIELDS = [
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "temperature",
  "max_tokens",
  "max_completion_tokens",
] as const;
const CLIENT_FIELD_SET = new Set<string>(CLIENT_FIELDS);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Extracts text and images from an OpenAI message `content` (string, parts array or null). */
export function contentOf(c: unknown, idx: number, images?: ImageInput[]): string {
  if (typeof c === "string") return c;
  if (c === null || c === undefined) return "";
  if (!Array.isArray(c))
    throw bad(`messages[${idx}].content must be a string or an array of parts`, `messages.${idx}.content`);
  let text = "";
  for (const part of c as unknown[]) {
    const p = part as { type?: unknown; text?: unknown; image_url?: { url?: unknown } | string };
    if (p?.type === "text" && typeof p.text === "string") text += (text ? "\n" : "") + p.text;
    else if (p?.type === "image_url") {
      const url = typeof p.image_url === "string" ? p.image_url : p.image_url?.url;
      const m = typeof url === "string" ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
      if (!m?.[1] || m[2] === undefined)
        throw bad(`messages[${idx}]: only data: URLs are accepted for images`, `messages.${idx}.content`);
      if (!images)
        throw bad(
          `messages[${idx}]: images are only accepted in the last user message`,
          `messages.${idx}.content`,
        );
      images.push({ mime: m[1], data: m[2] });
    } else
      throw bad(
        `messages[${idx}]: unsupported content part type ${JSON.stringify(p?.type)}`,
        `messages.${idx}.content`,
      );
  }
  return text;
}

function parseTools(raw: unknown): ClientTool[] {
  if (!Array.isArray(raw)) throw bad("tools must be an array of function tools", "tools");
  const seen = new Set<string>();
  return raw.map((t, i): ClientTool => {
    if (!isObj(t) || t.type !== "function" || !isObj(t.function))
      throw bad(
        `tools[${i}]: expected {type: "function", function: {...}}, got type ${JSON.stringify(isObj(t) ? t.type : t)}`,
        `tools.${i}.type`,
      );
    const f = t.function;
    if (typeof f.name !== "string" || !NAME.test(f.name))
      throw bad(`tools[${i}].function.name must match ^[a-zA-Z0-9_-]{1,64}$`, `tools.${i}.function.name`);
    if (seen.has(f.name))
      throw bad(`tools[${i}]: the function name ${f.name} is used twice`, `tools.${i}.function.name`);
    seen.add(f.name);
    if (f.parameters !== undefined && f.parameters !== null && !isObj(f.parameters))
      throw bad(
        `tools[${i}].function.parameters must be a JSON schema object`,
        `tools.${i}.function.parameters`,
      );
    return {
      name: f.name,
      description: typeof f.description === "string" ? f.description : "",
      parameters: isObj(f.parameters) ? f.parameters : { type: "object", properties: {} },
    };
  });
}

function parseToolChoice(raw: unknown, tools: ClientTool[] | undefined): ToolChoice {
  if (raw === "auto" || raw === "none" || raw === "required") {
    if (raw === "required" && !tools?.length) throw bad("tool_choice required needs tools", "tool_choice");
    return raw;
  }
  if (isObj(raw) && raw.type === "function" && isObj(raw.function) && typeof raw.function.name === "string") {
    const name = raw.function.name;
    if (!tools?.some((t) => t.name === name))
      throw bad(`tool_choice names the function ${name}, which is not in tools`, "tool_choice");
    return { type: "function", function: { name } };
  }
  throw bad(
    'tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}',
    "tool_choice",
  );
}

function parseResponseFormat(raw: unknown): ResponseFormat {
  if (!isObj(raw)) throw bad("response_format must be an object", "response_format");
  if (raw.type === "text") return { type: "text" };
  if (raw.type === "json_object") return { type: "json_object" };
  if (raw.type === "json_schema") {
    const js = raw.json_schema;
    if (!isObj(js) || typeof js.name !== "string" || !NAME.test(js.name))
      throw bad(
        "response_format.json_schema.name is required (^[a-zA-Z0-9_-]{1,64}$)",
        "response_format.json_schema.name",
      );
    if (js.schema !== undefined && js.schema !== null && !isObj(js.schema))
      throw bad(
        "response_format.json_schema.schema must be a JSON schema object",
        "response_format.json_schema.schema",
      );
    return {
      type: "json_schema",
      json_schema: {
        name: js.name,
        ...(isObj(js.schema) ? { schema: js.schema } : {}),
        ...(typeof js.strict === "boolean" ? { strict: js.strict } : {}),
        ...(typeof js.description === "string" ? { description: js.description } : {}),
      },
    };
  }
  throw bad(
    `response_format.type ${JSON.stringify(raw.type)} is not supported (text, json_object, json_schema)`,
    "response_format.type",
  );
}

/** The client's options (tools, format, sampling), or undefined when it set none. */
function parseClient(body: Obj): ClientRequest | undefined {
  const c: ClientRequest = {};
  const tools = body.tools ?? undefined;
  if (tools !== undefined && tools !== null) {
    const parsed = parseTools(tools);
    if (parsed.length > 0) c.tools = parsed;
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null)
    c.toolChoice = parseToolChoice(body.tool_choice, c.tools);
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null) {
    if (typeof body.parallel_tool_calls !== "boolean")
      throw bad("parallel_tool_calls must be a boolean", "parallel_tool_calls");
    c.parallelToolCalls = body.parallel_tool_calls;
  }
  if (body.response_format !== undefined && body.response_format !== null) {
    const f = parseResponseFormat(body.response_format);
    if (f.type !== "text") c.responseFormat = f;
  }
  if (body.temperature !== undefined && body.temperature !== null) {
    if (typeof body.temperature !== "number" || body.temperature < 0 || body.temperature > 2)
      throw bad("temperature must be a number from 0 to 2", "temperature");
    c.temperature = body.temperature;
  }
  for (const f of ["max_tokens", "max_completion_tokens"] as const) {
    const v = body[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
      throw bad(`${f} must be a positive integer`, f);
    c.maxTokens = v;
  }
  return Object.keys(c).length > 0 ? c : undefined;
}

function toolCallsOf(raw: unknown, i: number): ClientToolCall[] {
  if (!Array.isArray(raw))
    throw bad(`messages[${i}].tool_calls must be an array`, `messages.${i}.tool_calls`);
  return raw.map((tc, j): ClientToolCall => {
    const f = isObj(tc) && isObj(tc.function) ? tc.function : undefined;
    if (!isObj(tc) || typeof tc.id !== "string" || !f || typeof f.name !== "string")
      throw bad(
        `messages[${i}].tool_calls[${j}]: expected {id, type: "function", function: {name, arguments}}`,
        `messages.${i}.tool_calls.${j}`,
      );
    return { id: tc.id, name: f.name, arguments: typeof f.arguments === "string" ? f.arguments : "{}" };
  });
}

/** Validates and translates a request body (see the module comment). */
export function parseChatRequest(body: Obj, sessionHeader: string | undefined): ChatRequest {
  for (const [k, v] of Object.entries(body)) {
    if (HANDLED.has(k) || CLIENT_FIELD_SET.has(k) || v === null || v === undefined) continue;
    if (k in DEFAULTS) {
      if (v === DEFAULTS[k]) continue;
      throw bad(
        k === "n"
          ? `n: only 1 choice per request is supported, got ${JSON.stringify(v)}`
          : `${k}: only the default ${JSON.stringify(DEFAULTS[k])} is supported (the agent's model settings apply), got ${JSON.stringify(v)}`,
        k,
      );
    }
    throw bad(
      `${k} is not supported by this server; remove it (supported fields: see docs/openai-api.md)`,
      k,
    );
  }
  const msgs = body.messages;
  if (!Array.isArray(msgs) || msgs.length === 0) throw bad("messages must be a non-empty array", "messages");
  const stream = body.stream === true;
  const includeUsage =
    (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const sessionRaw = sessionHeader ?? (typeof body.user === "string" ? body.user : undefined);
  const client = parseClient(body);
  const lastIdx = msgs.length - 1;
  const last = msgs[lastIdx] as Obj | null;
  const cont = last?.role === "tool";
  if (!last || (last.role !== "user" && !cont))
    throw bad(
      "the last message must have role user (or tool, answering the model's tool calls)",
      `messages.${lastIdx}.role`,
    );
  // In a session the stored conversation is the history: only the trailing tool results are new.
  const results: ClientResult[] = [];
  if (sessionRaw !== undefined && cont)
    for (let i = lastIdx; i >= 0 && (msgs[i] as Obj | null)?.role === "tool"; i--) {
      const m = msgs[i] as Obj;
      if (typeof m.tool_call_id !== "string")
        throw bad(`messages[${i}].tool_call_id is required for a tool message`, `messages.${i}.tool_call_id`);
      results.unshift({
        callId: m.tool_call_id,
        content: contentOf(m.content, i),
        param: `messages.${i}.tool_call_id`,
      });
    }
  const images: ImageInput[] = [];
  const text = cont ? "" : contentOf(last.content, lastIdx, images);
  if (!cont && !text && images.length === 0)
    throw bad("the last user message is empty", `messages.${lastIdx}.content`);
  const system: string[] = [];
  const history: EphemeralEntry[] = [];
  const end = cont ? msgs.length : lastIdx;
  for (let i = 0; i < end; i++) {
    const m = msgs[i] as Obj | null;
    const role = m?.role;
    if (role === "system" || role === "developer") system.push(contentOf(m?.content, i));
    else if (sessionRaw !== undefined)
      continue; // persistent: the stored session is the history
    else if (role === "user") history.push({ role, content: contentOf(m?.content, i) });
    else if (role === "assistant") {
      const content = contentOf(m?.content, i);
      if (m?.function_call !== undefined && m.function_call !== null)
        throw bad(
          `messages[${i}].function_call (the legacy functions API) is not supported; use tool_calls`,
          `messages.${i}.function_call`,
        );
      const calls = m?.tool_calls === undefined || m.tool_calls === null ? [] : toolCallsOf(m.tool_calls, i);
      history.push(calls.length > 0 ? { role, content, tool_calls: calls } : { role, content });
    } else if (role === "tool") {
      if (typeof m?.tool_call_id !== "string")
        throw bad(`messages[${i}].tool_call_id is required for a tool message`, `messages.${i}.tool_call_id`);
      history.push({ role: "tool", content: contentOf(m.content, i), tool_call_id: m.tool_call_id });
    } else throw bad(`messages[${i}].role ${JSON.stringify(role)} is not supported`, `messages.${i}.role`);
  }
  return {
    stream,
    includeUsage,
    ...(sessionRaw !== undefined ? { sessionRaw } : {}),
    text,
    images,
    system,
    history,
    continue: cont,
    ...(results.length ? { results } : {}),
    ...(client ? { client } : {}),
  };
}
