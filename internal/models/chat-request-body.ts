/**
 * The JSON body of a streamed chat completion, byte for byte what the openai SDK's
 * `chat.completions.create` sends (a test compares them), built as a string so each tool set's specs
 * are serialized once.
 */
import type { ChatMessage, ModelRequest, ToolSpec } from "./types.js";
import type OpenAIType from "openai";

/** A request to one provider: `model` is the provider-local id (the part after `<provider>/`). */
export interface ProviderRequest extends Omit<ModelRequest, "model"> {
  model: string;
}

type ChatParam = OpenAIType.ChatCompletionMessageParam;

/** Converts our messages to the SDK's parameter shape. */
export function toOpenAIMessages(messages: ChatMessage[]): ChatParam[] {
  return messages.map((m): ChatParam => {
    switch (m.role) {
      case "system":
        return { role: "system", content: m.content };
      case "user":
        return { role: "user", content: m.content };
      case "tool":
        return { role: "tool", content: m.content, tool_call_id: m.tool_call_id };
      case "assistant":
        return m.tool_calls && m.tool_calls.length > 0
          ? {
              role: "assistant",
              content: m.content === "" ? null : m.content,
              tool_calls: m.tool_calls.map((c) => ({
                id: c.id,
                type: "function" as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : { role: "assistant", content: m.content };
    }
  });
}

function toOpenAITools(tools: ToolSpec[]): OpenAIType.ChatCompletionTool[] {
  return tools.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/** Serialized `tools` per tool-spec array: the registry hands out the same array until tools change. */
const toolsJson = new WeakMap<ToolSpec[], string>();

function toolsJsonOf(tools: ToolSpec[]): string {
  let json = toolsJson.get(tools);
  if (json === undefined) {
    json = JSON.stringify(toOpenAITools(tools));
    toolsJson.set(tools, json);
  }
  return json;
}

/**
 * The JSON body of a streamed chat completion, keys in the order the SDK's `create` would send them.
 * `max_completion_tokens` on api.openai.com (which rejects `max_tokens` for newer models), `max_tokens`
 * elsewhere.
 */
export function requestBody(req: ProviderRequest, officialHost: boolean): string {
  const head = JSON.stringify({
    model: req.model,
    messages: toOpenAIMessages(req.messages),
    stream: true,
    stream_options: { include_usage: true },
  });
  const tools = req.tools && req.tools.length > 0 ? `,"tools":${toolsJsonOf(req.tools)}` : "";
  const tail = JSON.stringify({
    ...(req.maxTokens !== undefined
      ? officialHost
        ? { max_completion_tokens: req.maxTokens }
        : { max_tokens: req.maxTokens }
      : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.toolChoice !== undefined && req.tools && req.tools.length > 0
      ? { tool_choice: req.toolChoice }
      : {}),
    ...(req.parallelToolCalls !== undefined && req.tools && req.tools.length > 0
      ? { parallel_tool_calls: req.parallelToolCalls }
      : {}),
    ...(req.responseFormat !== undefined ? { response_format: req.responseFormat } : {}),
  });
  return `${head.slice(0, -1)}${tools}${tail === "{}" ? "" : `,${tail.slice(1, -1)}`}}`;
}
