/**
 * The request side of `POST /v1/responses` (OpenAI's Responses API, issue 34): `input` (a string or
 * items: messages with text and images, `function_call`, `function_call_output`, `item_reference`)
 * becomes the conversation of the turn; `tools`, `tool_choice`, `text.format`, sampling and
 * `instructions` become the client's options. Every field is honoured, refused with a 400 naming it,
 * or (issue 46 item 3, what OpenAI's Codex CLI always sends) ignored and named in `ignored`, which the
 * door answers as the `X-Familiar-Ignored` header: `reasoning` (effort and summaries belong to one
 * provider's models), `include` (no reasoning or search items are produced to include),
 * `client_metadata` (the client's own bookkeeping), and tools of type `namespace` and `web_search`
 * (a group of another client's tools, and a search that OpenAI's servers run).
 *
 * Over 300 lines on purpose: as in openai-chat-request.ts, the known fields and the parser of each
 * stay together where one review can check that none is left out.
 */
import type { ClientRequest, ClientTool, ResponseFormat, ToolChoice } from "../core/client-request.js";
import type { EphemeralEntry, ImageInput } from "../core/host.js";
import { bad } from "./openai-chat-request.js";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Fields taken as they are, or only at the value that changes nothing. */
const HANDLED = new Set([
  "model",
  "input",
  "instructions",
  "previous_response_id",
  "stream",
  "tools",
  "tool_choice",
  "text",
  "temperature",
  "max_output_tokens",
  "parallel_tool_calls",
  "store",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
]);
/** Fields accepted and ignored (named in the `X-Familiar-Ignored` header when present). */
const IGNORED = new Set(["reasoning", "include", "client_metadata"]);
/** Tool types accepted and left out of the model's tools (named as `tools.<type>`). */
const IGNORED_TOOLS = new Set(["namespace", "web_search", "web_search_preview"]);
const DEFAULTS: Record<string, unknown> = {
  top_p: 1,
  truncation: "disabled",
  service_tier: "auto",
  background: false,
};

export interface ResponsesRequest {
  stream: boolean;
  store: boolean;
  previousResponseId?: string;
  instructions?: string;
  /** Earlier conversation from `input` (without the last user message). */
  entries: EphemeralEntry[];
  system: string[];
  text: string;
  images: ImageInput[];
  /** `input` ends with function call outputs: the model answers them. */
  continue: boolean;
  /** The field of each function call output entry (`input.3.call_id`), for errors. */
  outputParams: Map<EphemeralEntry, string>;
  client?: ClientRequest;
  metadata: Record<string, unknown>;
  /** Fields (and `tools.<type>`) that were accepted but ignored, in request order. */
  ignored: string[];
}

/** Finds an earlier output item by id (for `item_reference`). */
export type ItemLookup = (id: string) => Obj | undefined;

function textOfParts(c: unknown, at: string, images?: ImageInput[]): string {
  if (typeof c === "string") return c;
  if (!Array.isArray(c))
    throw bad(`${at} must be a string or an array of content parts`, at.replace(/\[(\d+)\]/g, ".$1"));
  let text = "";
  c.forEach((p: unknown, j) => {
    const part = isObj(p) ? p : {};
    const where = `${at}[${j}]`;
    if (
      (part.type === "input_text" || part.type === "output_text" || part.type === "text") &&
      typeof part.text === "string"
    )
      text += (text ? "\n" : "") + part.text;
    else if (part.type === "refusal" && typeof part.refusal === "string")
      text += (text ? "\n" : "") + part.refusal;
    else if (part.type === "input_image") {
      const url = typeof part.image_url === "string" ? part.image_url : "";
      const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      if (!m?.[1] || m[2] === undefined)
        throw bad(
          `${where}: only data: URLs are accepted for images (no file_id, no http URLs)`,
          where.replace(/\[(\d+)\]/g, ".$1"),
        );
      if (!images)
        throw bad(
          `${where}: images are only accepted in the last user message`,
          where.replace(/\[(\d+)\]/g, ".$1"),
        );
      images.push({ mime: m[1], data: m[2] });
    } else
      throw bad(
        `${where}: unsupported content part type ${JSON.stringify(part.type)}`,
        `${where.replace(/\[(\d+)\]/g, ".$1")}.type`,
      );
  });
  return text;
}

function parseTools(raw: unknown, ignored: string[]): ClientTool[] {
  if (!Array.isArray(raw)) throw bad("tools must be an array", "tools");
  const out: ClientTool[] = [];
  raw.forEach((t, i) => {
    if (isObj(t) && typeof t.type === "string" && IGNORED_TOOLS.has(t.type)) {
      if (!ignored.includes(`tools.${t.type}`)) ignored.push(`tools.${t.type}`);
      return;
    }
    if (!isObj(t) || t.type !== "function")
      throw bad(
        `tools[${i}]: only function tools are supported (namespace and web_search tools are ignored), got type ${JSON.stringify(isObj(t) ? t.type : t)}`,
        `tools.${i}.type`,
      );
    if (typeof t.name !== "string" || !NAME.test(t.name))
      throw bad(`tools[${i}].name must match ^[a-zA-Z0-9_-]{1,64}$`, `tools.${i}.name`);
    out.push({
      name: t.name,
      description: typeof t.description === "string" ? t.description : "",
      parameters: isObj(t.parameters) ? t.parameters : { type: "object", properties: {} },
    });
  });
  return out;
}

function parseToolChoice(raw: unknown, tools: ClientTool[] | undefined): ToolChoice {
  if (raw === "auto" || raw === "none" || raw === "required") return raw;
  if (isObj(raw) && raw.type === "function" && typeof raw.name === "string") {
    const name = raw.name;
    if (!tools?.some((t) => t.name === name))
      throw bad(`tool_choice names ${name}, which is not in tools`, "tool_choice");
    return { type: "function", function: { name } };
  }
  throw bad('tool_choice must be "auto", "none", "required" or {type: "function", name}', "tool_choice");
}

function parseFormat(raw: unknown): ResponseFormat | undefined {
  if (!isObj(raw)) throw bad("text must be an object", "text");
  for (const k of Object.keys(raw))
    if (k !== "format" && !(k === "verbosity" && (raw[k] === null || raw[k] === "medium")))
      throw bad(`text.${k} is not supported`, `text.${k}`);
  const f = raw.format;
  if (f === undefined || f === null) return undefined;
  if (!isObj(f)) throw bad("text.format must be an object", "text.format");
  if (f.type === "text") return undefined;
  if (f.type === "json_object") return { type: "json_object" };
  if (f.type === "json_schema") {
    if (typeof f.name !== "string" || !NAME.test(f.name))
      throw bad("text.format.name is required", "text.format.name");
    return {
      type: "json_schema",
      json_schema: {
        name: f.name,
        ...(isObj(f.schema) ? { schema: f.schema } : {}),
        ...(typeof f.strict === "boolean" ? { strict: f.strict } : {}),
        ...(typeof f.description === "string" ? { description: f.description } : {}),
      },
    };
  }
  throw bad(
    `text.format.type ${JSON.stringify(f.type)} is not supported (text, json_object, json_schema)`,
    "text.format.type",
  );
}

/** Appends a function call to the assistant entry just before it (one model step), or starts one. */
function pushCall(entries: EphemeralEntry[], call: { id: string; name: string; arguments: string }): void {
  const prev = entries.at(-1);
  if (prev?.role === "assistant") {
    const calls = "tool_calls" in prev ? prev.tool_calls : [];
    entries[entries.length - 1] = { role: "assistant", content: prev.content, tool_calls: [...calls, call] };
  } else entries.push({ role: "assistant", content: "", tool_calls: [call] });
}

function addItem(
  item: Obj,
  i: number,
  entries: EphemeralEntry[],
  system: string[],
  lookup: ItemLookup,
  last: boolean,
  images: ImageInput[],
  params: Map<EphemeralEntry, string>,
): void {
  const type = item.type ?? "message";
  const at = `input[${i}]`;
  if (type === "message") {
    const role = item.role;
    if (role === "system" || role === "developer") system.push(textOfParts(item.content, `${at}.content`));
    else if (role === "user")
      entries.push({
        role: "user",
        content: textOfParts(item.content, `${at}.content`, last ? images : undefined),
      });
    else if (role === "assistant") {
      const content = textOfParts(item.content, `${at}.content`);
      const prev = entries.at(-1);
      // An assistant's text and calls of one step may come as separate items.
      if (prev?.role === "assistant" && prev.content === "" && "tool_calls" in prev)
        entries[entries.length - 1] = { ...prev, content };
      else entries.push({ role: "assistant", content });
    } else throw bad(`${at}.role ${JSON.stringify(role)} is not supported`, `input.${i}.role`);
  } else if (type === "function_call") {
    if (typeof item.call_id !== "string" || typeof item.name !== "string")
      throw bad(`${at}: a function_call needs call_id and name`, `input.${i}`);
    pushCall(entries, {
      id: item.call_id,
      name: item.name,
      arguments: typeof item.arguments === "string" ? item.arguments : "{}",
    });
  } else if (type === "function_call_output") {
    if (typeof item.call_id !== "string")
      throw bad(`${at}: a function_call_output needs call_id`, `input.${i}.call_id`);
    const out = typeof item.output === "string" ? item.output : textOfParts(item.output, `${at}.output`);
    const e: EphemeralEntry = { role: "tool", content: out, tool_call_id: item.call_id };
    entries.push(e);
    params.set(e, `input.${i}.call_id`);
  } else if (type === "item_reference") {
    const ref = typeof item.id === "string" ? lookup(item.id) : undefined;
    if (!ref)
      throw bad(
        `${at}: no stored item ${JSON.stringify(item.id)} (items are kept for stored responses)`,
        `input.${i}.id`,
      );
    addItem(ref, i, entries, system, lookup, last, images, params);
  } else if (type === "reasoning") {
    // Opaque reasoning state of another provider's model: nothing the model here can read.
  } else throw bad(`${at}.type ${JSON.stringify(type)} is not supported`, `input.${i}.type`);
}

/** Validates and translates a request body (see the module comment). */
export function parseResponsesRequest(body: Obj, lookup: ItemLookup): ResponsesRequest {
  const ignored: string[] = [];
  for (const [k, v] of Object.entries(body)) {
    if (HANDLED.has(k) || v === null || v === undefined) continue;
    if (IGNORED.has(k)) {
      checkIgnored(k, v);
      if (!(Array.isArray(v) && v.length === 0)) ignored.push(k);
      continue;
    }
    if (k in DEFAULTS && v === DEFAULTS[k]) continue;
    throw bad(
      k in DEFAULTS
        ? `${k}: only ${JSON.stringify(DEFAULTS[k])} is supported, got ${JSON.stringify(v)}`
        : `${k} is not supported by this server; remove it (see docs/openai-api.md)`,
      k,
    );
  }
  const entries: EphemeralEntry[] = [];
  const system: string[] = [];
  const images: ImageInput[] = [];
  const params = new Map<EphemeralEntry, string>();
  const input = body.input;
  if (typeof input === "string") {
    if (input === "") throw bad("input must not be empty", "input");
    entries.push({ role: "user", content: input });
  } else if (Array.isArray(input) && input.length > 0) {
    input.forEach((it, i) => {
      if (!isObj(it)) throw bad(`input[${i}] must be an object`, `input.${i}`);
      addItem(it, i, entries, system, lookup, i === input.length - 1, images, params);
    });
  } else throw bad("input must be a string or a non-empty array of items", "input");
  const last = entries.at(-1);
  const cont = last?.role === "tool";
  if (!last || (last.role !== "user" && !cont))
    throw bad("input must end with a user message or function_call_output items", "input");
  if (!cont) entries.pop();
  const c: ClientRequest = {};
  if (body.tools !== undefined && body.tools !== null) {
    const tools = parseTools(body.tools, ignored);
    if (tools.length > 0) c.tools = tools;
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null)
    c.toolChoice = parseToolChoice(body.tool_choice, c.tools);
  if (typeof body.parallel_tool_calls === "boolean") c.parallelToolCalls = body.parallel_tool_calls;
  if (body.text !== undefined && body.text !== null) {
    const f = parseFormat(body.text);
    if (f) c.responseFormat = f;
  }
  if (body.temperature !== undefined && body.temperature !== null) {
    if (typeof body.temperature !== "number" || body.temperature < 0 || body.temperature > 2)
      throw bad("temperature must be a number from 0 to 2", "temperature");
    c.temperature = body.temperature;
  }
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) {
    const v = body.max_output_tokens;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
      throw bad("max_output_tokens must be a positive integer", "max_output_tokens");
    c.maxTokens = v;
  }
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== "string")
    throw bad("instructions must be a string", "instructions");
  if (
    body.previous_response_id !== undefined &&
    body.previous_response_id !== null &&
    typeof body.previous_response_id !== "string"
  )
    throw bad("previous_response_id must be a string", "previous_response_id");
  return {
    stream: body.stream === true,
    store: body.store !== false,
    ...(typeof body.previous_response_id === "string"
      ? { previousResponseId: body.previous_response_id }
      : {}),
    ...(typeof body.instructions === "string" && body.instructions
      ? { instructions: body.instructions }
      : {}),
    entries,
    system,
    text: cont || !last ? "" : typeof last.content === "string" ? last.content : "",
    images,
    continue: cont,
    outputParams: params,
    ...(Object.keys(c).length > 0 ? { client: c } : {}),
    metadata: isObj(body.metadata) ? body.metadata : {},
    ignored,
  };
}

/** An ignored field still has to have its documented shape: a typo'd value is a 400, not silence. */
function checkIgnored(k: string, v: unknown): void {
  if (k === "include") {
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string"))
      throw bad("include must be an array of strings", "include");
  } else if (!isObj(v)) throw bad(`${k} must be an object`, k);
}
