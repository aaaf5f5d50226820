/**
 * The built-in offline `echo` provider (`echo/echo`): answers `echo: <last user message>` in a few
 * deltas with estimated usage. Deterministic, no network, no credentials, so a fresh install runs
 * end to end before a real provider is configured. The router uses it automatically ONLY when no
 * provider at all is configured (and says so loudly); otherwise it is used only when asked for.
 */
import type { ChatMessage, ModelStreamEvent, Usage } from "./types.js";
import { ModelError } from "./types.js";
import type { Provider, ProviderRequest } from "./openai-provider.js";

/** Provider name of the echo model; `echo/echo` is its model reference. */
export const ECHO_PROVIDER = "echo";
export const ECHO_MODEL_REF = "echo/echo";

function textOf(m: ChatMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .map((p) => (p.type === "text" ? p.text : "[image]"))
    .join(" ")
    .trim();
}

/** The deterministic reply for a message list. */
export function echoReply(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "user") return `echo: ${textOf(m)}`;
  }
  return "echo: (no user message)";
}

const estimate = (s: string): number => Math.ceil(s.length / 4);

/** Splits into at most `n` pieces on word boundaries, so consumers see real streaming. */
function pieces(s: string, n: number): string[] {
  const words = s.split(/(?<=\s)/);
  const per = Math.max(1, Math.ceil(words.length / n));
  const out: string[] = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(""));
  return out.length > 0 ? out : [""];
}

/** Creates the echo provider. */
export function createEchoProvider(): Provider {
  return {
    name: ECHO_PROVIDER,
    async *stream(req: ProviderRequest): AsyncGenerator<ModelStreamEvent> {
      const origin = { provider: ECHO_PROVIDER, model: req.model };
      const reply = echoReply(req.messages);
      for (const delta of pieces(reply, 4)) {
        if (req.signal?.aborted)
          throw new ModelError("MODEL_ABORTED", "request to echo/echo was aborted", origin);
        // Yield to the event loop between deltas like a real stream would.
        await new Promise<void>((r) => setImmediate(r));
        yield { type: "text", delta };
      }
      if (req.signal?.aborted)
        throw new ModelError("MODEL_ABORTED", "request to echo/echo was aborted", origin);
      let input = 0;
      for (const m of req.messages) input += 4 + estimate(textOf(m));
      const output = estimate(reply);
      const usage: Usage = {
        input,
        output,
        cacheRead: 0,
        cacheWrite: 0,
        reasoning: 0,
        total: input + output,
      };
      yield {
        type: "usage",
        usage,
        raw: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
      };
      yield { type: "done", finishReason: "stop", provider: ECHO_PROVIDER, model: req.model };
    },
  };
}
