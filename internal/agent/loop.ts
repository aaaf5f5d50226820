/**
 * The agent loop: one function, with the model client, tools, history and signal passed in, that
 * yields typed events (internal/agent/events.ts) and returns the outcome. It does no I/O of its own;
 * persistence, compaction and loop detection plug in through `hooks`.
 *
 * Invariants:
 * - tool calls of one model response run concurrently; every call gets exactly one result message;
 * - a tool that throws or gets bad arguments becomes an error result, never a crashed turn;
 * - an abort stops at once and keeps the partial text;
 * - at `maxIterations` the turn ends with a short honest message.
 *
 * Over 300 lines on purpose: the model/tool loop is one algorithm; its steps are named functions
 * below it.
 */
import type { AgentEvent } from "../core/agent-events.js";
import { addUsage } from "../core/usage.js";
import { ModelError, ZERO_USAGE, type CallBill, type ToolCall, type Usage } from "../models/types.js";
import type { ToolContext, ToolResult } from "../tools/tool.js";
import { promptParts, type PromptParts } from "./prompt-parts.js";
import { parseArgs, toolImagesMessage, userMessageFor } from "./loop-messages.js";

import type { LoopOptions, LoopOutcome } from "./loop-types.js";
export type { LoopGuard, LoopGuardVerdict, LoopHooks, LoopOptions, LoopOutcome } from "./loop-types.js";

const MAX_OVERFLOW_RETRIES = 3;

/** Runs one turn. Yields events; returns the outcome. Never throws for model or tool failures. */
export async function* runAgentLoop(opts: LoopOptions): AsyncGenerator<AgentEvent, LoopOutcome> {
  const { runId, signal, hooks = {} } = opts;
  let messages = opts.messages;
  let usage: Usage = { ...ZERO_USAGE };
  let model: string | undefined;
  let lastText = "";
  const client = opts.client;
  const clientNames = new Set((client?.tools ?? []).map((t) => t.name));
  const clientSpecs = client?.tools ?? []; // ClientTool has the ToolSpec shape
  // Deferred tools the model loaded this turn (`load_tools`); their schemas join the next calls.
  const loaded = new Set<string>();
  const toolContext: ToolContext = {
    ...opts.toolContext,
    loadTools: (names) => {
      for (const n of names) loaded.add(n);
    },
  };

  for (let iteration = 1; iteration <= opts.maxIterations; iteration++) {
    if (signal.aborted)
      return {
        text: lastText,
        finishReason: "aborted",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration - 1,
      };
    const replaced = await hooks.beforeModelCall?.(messages, iteration);
    if (replaced) messages = replaced;
    const callT0 = performance.now();
    let prompt: PromptParts | undefined;
    const stop = hooks.gate?.(messages, iteration);
    if (stop) {
      yield { type: "error", runId, code: stop.code, message: stop.message };
      return {
        text: stop.message,
        finishReason: "error",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration - 1,
        error: stop,
      };
    }

    let text = "";
    let finishReason = "stop";
    let provider: string | undefined;
    let callUsage: Usage | undefined;
    let callBill: CallBill | undefined;
    const calls: ToolCall[] = [];
    let overflowAttempts = 0;
    /** Overflow compactions that actually happened (what the user is told), not attempts. */
    let overflowCompactions = 0;
    for (;;) {
      try {
        text = "";
        calls.length = 0;
        const maxTokens = client?.maxTokens ?? opts.maxTokens;
        const temperature = client?.temperature ?? opts.temperature;
        const toolChoice = iteration === 1 || client?.toolChoice === "none" ? client?.toolChoice : undefined;
        // The client's functions shadow the agent's tools of the same name. Without them the tool
        // set's own array goes out as is: the registry hands out the same array until the tools
        // change, and the request body serializes each array once (chat-request-body.ts).
        const own = opts.tools.specs(loaded);
        const specs =
          clientSpecs.length === 0 ? own : [...own.filter((t) => !clientNames.has(t.name)), ...clientSpecs];
        prompt = promptParts(messages, specs);
        const req = {
          messages,
          ...(specs.length > 0 ? { tools: specs } : {}),
          ...(opts.modelRef ? { model: opts.modelRef } : {}),
          ...(maxTokens ? { maxTokens } : {}),
          ...(temperature !== undefined ? { temperature } : {}),
          ...(toolChoice !== undefined ? { toolChoice } : {}),
          ...(client?.parallelToolCalls !== undefined ? { parallelToolCalls: client.parallelToolCalls } : {}),
          ...(client?.responseFormat ? { responseFormat: client.responseFormat } : {}),
          agentId: opts.toolContext.agentId,
          signal,
          ...(hooks.onModelRetry ? { onRetry: hooks.onModelRetry } : {}),
          ...(hooks.onBilled ? { onBilled: hooks.onBilled } : {}),
        };
        for await (const ev of opts.model.stream(req)) {
          switch (ev.type) {
            case "text":
              text += ev.delta;
              yield { type: "text_delta", runId, delta: ev.delta };
              break;
            case "thinking":
              yield { type: "thinking_delta", runId, delta: ev.delta };
              break;
            case "tool_call":
              calls.push(ev.call);
              break;
            case "usage":
              callUsage = ev.usage;
              callBill = ev;
              break;
            case "done":
              finishReason = ev.finishReason;
              provider = ev.provider;
              model = `${ev.provider}/${ev.model}`;
              break;
          }
        }
        break;
      } catch (err) {
        if (signal.aborted || (err instanceof ModelError && err.code === "MODEL_ABORTED")) {
          if (text) lastText = text;
          return {
            text: lastText,
            finishReason: "aborted",
            usage,
            ...(model ? { model } : {}),
            iterations: iteration,
          };
        }
        if (
          err instanceof ModelError &&
          err.code === "MODEL_CONTEXT_OVERFLOW" &&
          text === "" &&
          hooks.onContextOverflow
        ) {
          overflowAttempts++;
          if (overflowAttempts <= MAX_OVERFLOW_RETRIES) {
            const compacted = await hooks
              .onContextOverflow(messages, overflowAttempts)
              .catch(() => undefined);
            if (compacted) {
              messages = compacted;
              overflowCompactions++;
              yield {
                type: "notice",
                runId,
                // Not "compaction": the compactor already announced what it did; this one only
                // says why, and channels forward just the compactor's line.
                kind: "overflow_retry",
                text: "Context was too long for the model: compacted the conversation and retried.",
              };
              continue;
            }
          }
        }
        const code = err instanceof ModelError ? err.code : "AGENT_ERROR";
        const message = userMessageFor(err, overflowCompactions);
        yield { type: "error", runId, code, message };
        return {
          text: text || lastText,
          finishReason: "error",
          usage,
          ...(model ? { model } : {}),
          iterations: iteration,
          error: {
            code,
            message,
            ...(err instanceof ModelError && err.info.retryAfterMs !== undefined
              ? { retryAfterMs: err.info.retryAfterMs }
              : {}),
          },
        };
      }
    }
    if (callUsage) {
      usage = addUsage(usage, callUsage);
      yield { type: "usage", runId, usage: callUsage, provider: provider ?? "", model: model ?? "" };
      hooks.onUsage?.({
        usage: callUsage,
        provider: provider ?? "",
        model: (model ?? "").split("/").slice(1).join("/"),
        raw: undefined,
        ...(callBill?.cost !== undefined ? { cost: callBill.cost } : {}),
        ...(callBill?.estimated ? { estimated: true } : {}),
        ...(callBill?.callId ? { callId: callBill.callId } : {}),
        durationMs: performance.now() - callT0,
        ...(prompt ? { prompt } : {}),
        ...(overflowAttempts > 0 ? { overflowRetries: overflowAttempts } : {}),
        ...(replaced ? { compacted: true } : {}),
      });
    }
    hooks.onAssistantMessage?.({
      content: text,
      toolCalls: calls,
      ...(model ? { model } : {}),
      ...(provider ? { provider } : {}),
      finishReason: calls.length > 0 ? "tool_calls" : finishReason,
      ...(callUsage ? { usage: callUsage } : {}),
    });
    messages = [
      ...messages,
      { role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
    ];

    if (calls.length === 0) {
      return {
        text,
        finishReason: finishReason === "length" ? "length" : "stop",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration,
      };
    }
    if (text) yield { type: "iteration_text", runId, text };
    lastText = text;

    // Run this response's tool calls concurrently; yield results as they complete. The client's own
    // functions are not ours to run: they end the turn below.
    const clientCalls = calls.filter((c) => clientNames.has(c.name));
    const ownCalls = clientCalls.length > 0 ? calls.filter((c) => !clientNames.has(c.name)) : calls;
    let breaker: string | undefined;
    const results = new Map<string, { content: string; isError: boolean; images?: ToolResult["images"] }>();
    const pending = new Map<string, Promise<{ call: ToolCall; result: ToolResult; ms: number }>>();
    for (const call of ownCalls) {
      const args = parseArgs(call.arguments);
      yield { type: "tool_start", runId, callId: call.id, name: call.name, args };
      const verdict = opts.loopGuard?.beforeCall({ name: call.name, args }) ?? { verdict: "ok" as const };
      if (verdict.verdict === "breaker" || verdict.verdict === "critical") {
        const why = verdict.message ?? "the same call repeated too often";
        if (verdict.verdict === "breaker") breaker = why;
        const content = `Blocked by loop detection: ${why}`;
        results.set(call.id, { content, isError: true });
        yield {
          type: "tool_end",
          runId,
          callId: call.id,
          name: call.name,
          result: content,
          isError: true,
          durationMs: 0,
        };
        continue;
      }
      const started = Date.now();
      const exec = (): Promise<ToolResult> => opts.tools.execute(call, signal, toolContext);
      const run = (hooks.onToolCall ? hooks.onToolCall(call, exec) : exec()).then((result) => {
        opts.loopGuard?.afterCall({ name: call.name, args }, result.content);
        const warned =
          verdict.verdict === "warning" && verdict.message
            ? { ...result, content: `${result.content}\n\n[loop detection warning] ${verdict.message}` }
            : result;
        return { call, result: warned, ms: Date.now() - started };
      });
      pending.set(call.id, run);
    }
    while (pending.size > 0) {
      const done = await Promise.race(pending.values());
      pending.delete(done.call.id);
      results.set(done.call.id, {
        content: done.result.content,
        isError: done.result.isError === true,
        ...(done.result.images?.length ? { images: done.result.images } : {}),
      });
      yield {
        type: "tool_end",
        runId,
        callId: done.call.id,
        name: done.call.name,
        result: done.result.content,
        isError: done.result.isError === true,
        durationMs: done.ms,
      };
    }
    // Results go back in call order so the transcript is deterministic (the client's calls have none).
    for (const call of ownCalls) {
      const r = results.get(call.id) ?? { content: "no result", isError: true };
      hooks.onToolResult?.({ callId: call.id, name: call.name, content: r.content, isError: r.isError });
      messages = [...messages, { role: "tool", tool_call_id: call.id, name: call.name, content: r.content }];
    }
    if (clientCalls.length > 0)
      return {
        text,
        finishReason: "tool_calls",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration,
        toolCalls: clientCalls,
      };
    const images = toolImagesMessage(calls, results, opts.acceptsImages !== false);
    if (images) messages = [...messages, images];
    if (breaker) {
      const msg = `I stopped because I was repeating the same action without progress (${breaker}). Tell me how you would like to continue.`;
      yield { type: "notice", runId, kind: "loop_breaker", text: msg };
      return {
        text: msg,
        finishReason: "loop_breaker",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration,
      };
    }
    if (signal.aborted)
      return {
        text: lastText,
        finishReason: "aborted",
        usage,
        ...(model ? { model } : {}),
        iterations: iteration,
      };
  }
  const msg = `I stopped after ${opts.maxIterations} steps without finishing. Say "continue" if you want me to keep going.`;
  return {
    text: lastText ? `${lastText}\n\n${msg}` : msg,
    finishReason: "max_iterations",
    usage,
    ...(model ? { model } : {}),
    iterations: opts.maxIterations,
  };
}
