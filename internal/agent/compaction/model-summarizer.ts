/**
 * A {@link Summarizer} over any ModelClient (normally the model router): one non-tool call with the
 * summary prompt, returning the streamed text. Errors (ModelError with its code) propagate so
 * `compactHistory` can fall back and log them.
 */
import type { ModelClient } from "../../models/types.js";
import type { Summarizer } from "./compact.js";

export interface ModelSummarizerOptions {
  /** `<provider>/<model>`; the router's primary chain when undefined. */
  modelRef?: string;
  /** Cap on the reply. Default 4096 tokens. */
  maxTokens?: number;
  /** Called with each call's usage, for accounting. */
  onUsage?: (u: { input: number; output: number; provider: string; model: string }) => void;
}

/** Builds a summariser that calls `model`. */
export function modelSummarizer(model: ModelClient, opts: ModelSummarizerOptions = {}): Summarizer {
  return async (prompt, signal) => {
    let text = "";
    let usage: { input: number; output: number } | undefined;
    for await (const ev of model.stream({
      messages: prompt,
      ...(opts.modelRef ? { model: opts.modelRef } : {}),
      maxTokens: opts.maxTokens ?? 4096,
      temperature: 0.2,
      signal,
    })) {
      if (ev.type === "text") text += ev.delta;
      else if (ev.type === "usage") usage = { input: ev.usage.input, output: ev.usage.output };
      else if (ev.type === "done" && usage)
        opts.onUsage?.({ ...usage, provider: ev.provider, model: ev.model });
    }
    return text;
  };
}
