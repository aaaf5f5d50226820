/**
 * What an API client may ask of one turn beyond its text (issue 34): its own functions (client
 * tools), how tools are chosen, the answer's format, and per-request sampling. The `/v1` doors
 * translate OpenAI's fields into this; the loop honours it (internal/agent/loop.ts).
 */

/** OpenAI's `tool_choice`. */
export type ToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

/** OpenAI's `response_format`. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: {
        name: string;
        schema?: Record<string, unknown>;
        strict?: boolean | null;
        description?: string;
      };
    };

/** A function the client runs itself: the model may call it; the turn then ends with the call. */
export interface ClientTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A tool call as the turn hands it to the client (`arguments` is the raw JSON string). */
export interface ClientToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The client's options for one turn. */
export interface ClientRequest {
  /** Client functions. Their names shadow the agent's own tools of the same name for this turn. */
  tools?: ClientTool[];
  /** Applies to the turn's first model call; later calls (after the agent's own tools ran) use auto. */
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  /** Sent with every model call of the turn. */
  responseFormat?: ResponseFormat;
  temperature?: number;
  maxTokens?: number;
}
