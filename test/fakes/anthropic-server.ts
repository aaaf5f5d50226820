/**
 * A fake Anthropic Messages API on 127.0.0.1 (node:http, port 0), for driving the real Claude Code
 * CLI (`ANTHROPIC_BASE_URL` + `ANTHROPIC_API_KEY`) in tests. It speaks the wire format of
 * api.anthropic.com closely enough for the CLI: `POST /v1/messages` (query string ignored, e.g.
 * `?beta=true`), `x-api-key` checked, and when `stream` is set the SSE sequence `message_start`,
 * `content_block_start`, `content_block_delta` (text_delta pieces), `content_block_stop`,
 * `message_delta` (stop_reason, usage) and `message_stop`; otherwise one `message` JSON object.
 * Errors use Anthropic's `{type: "error", error: {type, message}}` shape.
 *
 * Every reply is `answer: <the last text block of the last user message>` unless `reply` says
 * otherwise; requests can be held (never answered) to kill the CLI mid-turn.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One content block of a request message, as far as the fake reads it. */
interface Block {
  type: string;
  text?: string;
}

export interface AnthropicRequest {
  path: string;
  body: {
    model?: string;
    stream?: boolean;
    messages?: { role: string; content: string | Block[] }[];
  };
}

export interface FakeAnthropic {
  baseUrl: string;
  apiKey: string;
  requests: AnthropicRequest[];
  /** Holds (never answers) the next request whose user text contains `marker`; resolves once it has arrived. */
  holdNext(marker: string): Promise<void>;
  close(): Promise<void>;
}

/** All text of the last user message of a request (the CLI adds `<system-reminder>` blocks beside it). */
export function lastUserText(req: AnthropicRequest): string {
  const last = [...(req.body.messages ?? [])].reverse().find((m) => m.role === "user");
  if (!last) return "";
  if (typeof last.content === "string") return last.content;
  return last.content.flatMap((b) => (b.type === "text" && b.text ? [b.text] : [])).join("\n");
}

function answerFor(req: AnthropicRequest): string {
  const last = [...(req.body.messages ?? [])].reverse().find((m) => m.role === "user");
  const blocks =
    typeof last?.content === "string" ? [{ type: "text", text: last.content }] : (last?.content ?? []);
  const text = [...blocks]
    .reverse()
    .find((b) => b.type === "text" && !b.text?.startsWith("<system-reminder>"));
  return `answer: ${(text?.text ?? "").slice(-200)}`;
}

export async function startFakeAnthropic(opts: { apiKey?: string } = {}): Promise<FakeAnthropic> {
  const apiKey = opts.apiKey ?? "sk-ant-test";
  const requests: AnthropicRequest[] = [];
  const held: ServerResponse[] = [];
  let hold: { marker: string; arrived: () => void } | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.setEncoding("utf8").on("data", (d: string) => (raw += d));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      const error = (status: number, type: string, message: string): void => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type, message } }));
      };
      if (req.method !== "POST" || path !== "/v1/messages")
        return error(404, "not_found_error", `no route ${path}`);
      if (req.headers["x-api-key"] !== apiKey && req.headers.authorization !== `Bearer ${apiKey}`)
        return error(401, "authentication_error", "invalid x-api-key");
      let body: AnthropicRequest["body"];
      try {
        body = JSON.parse(raw) as AnthropicRequest["body"];
      } catch {
        return error(400, "invalid_request_error", "body is not JSON");
      }
      const r: AnthropicRequest = { path, body };
      requests.push(r);
      if (hold && lastUserText(r).includes(hold.marker)) {
        hold.arrived();
        hold = undefined;
        held.push(res);
        return;
      }
      reply(res, r);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    holdNext: (marker) => new Promise<void>((arrived) => (hold = { marker, arrived })),
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function reply(res: ServerResponse, r: AnthropicRequest): void {
  const text = answerFor(r);
  const model = r.body.model ?? "claude-sonnet-4-5";
  const input = Math.ceil(JSON.stringify(r.body.messages ?? []).length / 4);
  const output = Math.ceil(text.length / 4);
  const message = {
    id: `msg_${Math.random().toString(36).slice(2, 12)}`,
    type: "message",
    role: "assistant",
    model,
    content: [] as { type: "text"; text: string }[],
    stop_reason: null as string | null,
    stop_sequence: null,
    usage: {
      input_tokens: input,
      output_tokens: 1,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
  if (!r.body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        ...message,
        content: [{ type: "text", text }],
        stop_reason: "end_turn",
        usage: { ...message.usage, output_tokens: output },
      }),
    );
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const ev = (type: string, data: object): boolean =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev("message_start", { message });
  ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  for (const piece of text.match(/[\s\S]{1,16}/g) ?? [])
    ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } });
  ev("content_block_stop", { index: 0 });
  ev("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: output },
  });
  ev("message_stop", {});
  res.end();
}
