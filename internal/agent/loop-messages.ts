/**
 * What the agent loop reads and writes besides the model's stream: tool-call arguments, and the
 * messages it writes itself: the user's one-line error for a failed model call, and the
 * message that shows the model images its tools returned (tool messages carry text only in the chat
 * API, so images follow the tool results as a user message with image parts).
 */
import type { ChatMessage, ToolCall } from "../models/types.js";
import { ModelError } from "../models/types.js";
import { clause } from "../models/provider-hint.js";
import type { ToolResult } from "../tools/tool.js";

/** The images of this step's tool results as one user message, or undefined when there are none. */
export function toolImagesMessage(
  calls: readonly ToolCall[],
  results: ReadonlyMap<string, { images?: ToolResult["images"] }>,
  acceptsImages: boolean,
): ChatMessage | undefined {
  if (!acceptsImages) return undefined;
  const shown = calls.filter((c) => results.get(c.id)?.images?.length);
  if (shown.length === 0) return undefined;
  return {
    role: "user",
    content: [
      {
        type: "text",
        text: `[Images returned by the tool call${shown.length > 1 ? "s" : ""} above: ${shown.map((c) => `${c.name} (${c.id})`).join(", ")}]`,
      },
      ...shown.flatMap((c) =>
        (results.get(c.id)?.images ?? []).map((img) => ({
          type: "image_url" as const,
          image_url: { url: `data:${img.mime};base64,${img.data}` },
        })),
      ),
    ],
  };
}

/** A short message the user can act on. */
export function userMessageFor(err: unknown, overflowCompactions: number): string {
  if (err instanceof ModelError) {
    switch (err.code) {
      // err.message names the provider, its URL (without secrets) and the fix: say it once, no more.
      case "MODEL_AUTH":
        return `The model provider rejected the credentials: ${clause(err.message)}.`;
      case "MODEL_BAD_REQUEST":
        return `The model provider refused the request: ${clause(err.message)}.`;
      case "MODEL_UNREACHABLE":
        return `The model provider could not be reached: ${clause(err.message)}.`;
      case "MODEL_CONTEXT_OVERFLOW":
        return overflowCompactions > 0
          ? `The conversation is still too long for the model after ${overflowCompactions} compaction${overflowCompactions === 1 ? "" : "s"}. Use /new to start fresh.`
          : `The conversation is too long for the model. Use /compact or /new.`;
      case "MODEL_NOT_CONFIGURED":
        return err.message;
      case "MODEL_ALL_FAILED":
        return `No model could answer: ${clause(err.message)}.`;
      default:
        return `The model is unavailable right now: ${clause(err.message)}. Please try again in a moment.`;
    }
  }
  return `Something went wrong while answering: ${(err as Error).message ?? String(err)}`;
}

/** Parses tool-call arguments; malformed JSON is passed on as the raw string (the registry reports it). */
export function parseArgs(raw: string): unknown {
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
