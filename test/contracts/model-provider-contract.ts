/**
 * The ONE contract suite for the model Provider port (`Provider` in internal/models/openai-provider.ts,
 * streaming the `ModelStreamEvent`s of internal/models/types.ts). It asserts what the router
 * (internal/models/router.ts) and the agent loop (internal/agent/loop.ts) rely on: text deltas, then
 * complete tool calls, then one usage, then exactly one `done` naming provider and model, and nothing
 * after; an AbortSignal ends the call with MODEL_ABORTED; every failure is a typed ModelError whose code
 * tells the router whether to fail fast (the remote refused) or retry/fall back (it was unreachable).
 *
 * An implementation declares what it can do ({@link ProviderCapabilities}); a test of a capability it
 * lacks is reported as skipped, and the behaviour it promises instead is tested.
 *
 * Usage (inside a vitest file): `runModelProviderContract("openai", { tools: true, remote: true }, factory)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Provider, ProviderRequest } from "../../internal/models/openai-provider.js";
import { ModelError, type ModelStreamEvent, type ToolCall } from "../../internal/models/types.js";

/** What an implementation can do; the suite tests each declared capability, and its absence. */
export interface ProviderCapabilities {
  /** Emits tool calls when offered tools, and accepts assistant tool calls and tool results back. */
  tools: boolean;
  /** Talks to a remote that can refuse (HTTP status) or be unreachable. */
  remote: boolean;
}

/** What the suite needs to drive and observe one provider. */
export interface ProviderHarness {
  provider: Provider;
  /** A provider-local model id the provider answers for. */
  model: string;
  /** (tools) Makes the next call answer with this tool call. */
  answerWithToolCall?(call: ToolCall): void;
  /** (tools) The messages the remote received on the last call: role and tool_call_id. */
  lastReceived?(): { role: string; tool_call_id?: string | undefined }[];
  /** Makes the next answer stay open after its first text delta, as a long remote stream does. */
  holdOpen?(): void;
  /** (remote) Makes the next call be refused with this HTTP status (and `retry-after` seconds). */
  refuseNext?(status: number, retryAfterS?: number): void;
  /** (remote) Makes the next answer stop mid-stream, without a finish reason. */
  truncateNext?(): void;
  /** (remote) The same provider pointed at an address where nothing listens. */
  unreachable?(): Promise<Provider>;
  cleanup(): Promise<void>;
}

const TOOL = {
  name: "lookup",
  description: "looks a word up",
  parameters: { type: "object", properties: {} },
};

/** Registers the contract tests for one implementation. */
export function runModelProviderContract(
  name: string,
  caps: ProviderCapabilities,
  factory: () => Promise<ProviderHarness>,
): void {
  describe(`model provider contract: ${name}`, () => {
    let h: ProviderHarness | undefined;
    const make = async (): Promise<ProviderHarness> => (h = await factory());
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });
    const request = (x: ProviderHarness, extra: Partial<ProviderRequest> = {}): ProviderRequest => ({
      model: x.model,
      messages: [{ role: "user", content: "what is a familiar?" }],
      ...extra,
    });
    async function collect(p: Provider, req: ProviderRequest): Promise<ModelStreamEvent[]> {
      const out: ModelStreamEvent[] = [];
      for await (const ev of p.stream(req)) out.push(ev);
      return out;
    }
    async function failure(p: Provider, req: ProviderRequest): Promise<ModelError> {
      const err = await collect(p, req).then(
        (evs) => new Error(`expected a failure, got ${evs.map((e) => e.type).join(",")}`),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ModelError);
      return err as ModelError;
    }

    it("streams text deltas, then one usage, then exactly one done naming provider and model", async () => {
      const x = await make();
      const evs = await collect(x.provider, request(x));
      const types = evs.map((e) => e.type);
      expect(types.filter((t) => t === "text").length).toBeGreaterThan(0);
      expect(types.slice(-2)).toEqual(["usage", "done"]);
      expect(types.filter((t) => t === "done")).toHaveLength(1);
      expect(types.filter((t) => t === "usage")).toHaveLength(1);
      // Every text delta comes before the end events the loop closes the message on.
      expect(types.lastIndexOf("text")).toBeLessThan(types.indexOf("usage"));
      const text = evs.map((e) => (e.type === "text" ? e.delta : "")).join("");
      expect(text.trim().length).toBeGreaterThan(0);
      const usage = evs.find((e) => e.type === "usage");
      if (usage?.type !== "usage") throw new Error("no usage");
      expect(usage.usage.input).toBeGreaterThan(0);
      expect(usage.usage.output).toBeGreaterThan(0);
      expect(usage.usage.total).toBeGreaterThanOrEqual(usage.usage.output);
      expect(evs.at(-1)).toMatchObject({
        type: "done",
        finishReason: "stop",
        provider: x.provider.name,
        model: x.model,
      });
    });

    it("yields nothing after done, even when the consumer keeps pulling", async () => {
      const x = await make();
      const it = x.provider.stream(request(x))[Symbol.asyncIterator]();
      let r = await it.next();
      while (!r.done && r.value.type !== "done") r = await it.next();
      expect(r.done).toBe(false);
      expect(await it.next()).toEqual({ done: true, value: undefined });
      expect(await it.next()).toEqual({ done: true, value: undefined });
    });

    it("answers independent calls independently (a provider is reusable)", async () => {
      const x = await make();
      const a = await collect(x.provider, request(x, { messages: [{ role: "user", content: "alpha" }] }));
      const b = await collect(x.provider, request(x, { messages: [{ role: "user", content: "beta" }] }));
      expect(a.at(-1)?.type).toBe("done");
      expect(b.at(-1)?.type).toBe("done");
    });

    it.skipIf(!caps.tools)(
      "emits a complete tool call before usage and done, with finish reason tool_calls",
      async () => {
        const x = await make();
        x.answerWithToolCall?.({ id: "call_c1", name: "lookup", arguments: '{"word":"familiar"}' });
        const evs = await collect(x.provider, request(x, { tools: [TOOL] }));
        const calls = evs.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
        expect(calls).toEqual([{ id: "call_c1", name: "lookup", arguments: '{"word":"familiar"}' }]);
        expect(evs.map((e) => e.type).slice(-3)).toEqual(["tool_call", "usage", "done"]);
        expect(evs.at(-1)).toMatchObject({ type: "done", finishReason: "tool_calls" });
      },
    );

    it.skipIf(!caps.tools)("takes the tool call and its result back and answers in text", async () => {
      const x = await make();
      const evs = await collect(
        x.provider,
        request(x, {
          tools: [TOOL],
          messages: [
            { role: "user", content: "look up familiar" },
            {
              role: "assistant",
              content: "",
              tool_calls: [{ id: "call_c1", name: "lookup", arguments: "{}" }],
            },
            { role: "tool", content: "a spirit helper", tool_call_id: "call_c1", name: "lookup" },
          ],
        }),
      );
      expect(evs.at(-1)).toMatchObject({ type: "done", finishReason: "stop" });
      expect(evs.some((e) => e.type === "text")).toBe(true);
      expect(x.lastReceived?.()).toEqual([
        expect.objectContaining({ role: "user" }),
        expect.objectContaining({ role: "assistant" }),
        expect.objectContaining({ role: "tool", tool_call_id: "call_c1" }),
      ]);
    });

    it.skipIf(caps.tools)("without tool support, answers in text and never emits a tool call", async () => {
      const x = await make();
      const evs = await collect(x.provider, request(x, { tools: [TOOL] }));
      expect(evs.some((e) => e.type === "tool_call")).toBe(false);
      expect(evs.at(-1)).toMatchObject({ type: "done", finishReason: "stop" });
    });

    it("refuses an already aborted signal with MODEL_ABORTED and emits nothing", async () => {
      const x = await make();
      const ac = new AbortController();
      ac.abort();
      const seen: ModelStreamEvent[] = [];
      const err = await (async () => {
        for await (const ev of x.provider.stream(request(x, { signal: ac.signal }))) seen.push(ev);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as ModelError).code).toBe("MODEL_ABORTED");
      expect(seen).toEqual([]);
    });

    it("stops a call aborted mid-stream with MODEL_ABORTED and no done", async () => {
      const x = await make();
      x.holdOpen?.();
      const ac = new AbortController();
      const seen: ModelStreamEvent[] = [];
      const err = await (async () => {
        for await (const ev of x.provider.stream(request(x, { signal: ac.signal }))) {
          seen.push(ev);
          if (ev.type === "text") ac.abort();
        }
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as ModelError).code).toBe("MODEL_ABORTED");
      expect((err as ModelError).transient).toBe(false);
      // Deltas the remote had already sent may still arrive; nothing that ends a message may.
      expect(new Set(seen.map((e) => e.type))).toEqual(new Set(["text"]));
    });

    it.skipIf(!caps.remote)(
      "types a refusal: 401 is MODEL_AUTH (fail fast), 500 is MODEL_SERVER (retry)",
      async () => {
        const x = await make();
        x.refuseNext?.(401);
        const auth = await failure(x.provider, request(x));
        expect(auth.code).toBe("MODEL_AUTH");
        expect(auth.transient).toBe(false);
        expect(auth.info).toMatchObject({ provider: x.provider.name, model: x.model, status: 401 });
        x.refuseNext?.(500);
        const server = await failure(x.provider, request(x));
        expect(server.code).toBe("MODEL_SERVER");
        expect(server.transient).toBe(true);
        expect(server.info.status).toBe(500);
      },
    );

    it.skipIf(!caps.remote)(
      "types a rate limit with its retry-after, and a truncated stream, as retryable",
      async () => {
        const x = await make();
        x.refuseNext?.(429, 2);
        const limited = await failure(x.provider, request(x));
        expect(limited.code).toBe("MODEL_RATE_LIMIT");
        expect(limited.transient).toBe(true);
        expect(limited.info.retryAfterMs).toBe(2000);
        x.truncateNext?.();
        const cut = await failure(x.provider, request(x));
        expect(cut.code).toBe("MODEL_BAD_STREAM");
        expect(cut.transient).toBe(true);
      },
    );

    it.skipIf(!caps.remote)(
      "types an unreachable remote as MODEL_UNREACHABLE (retry or fall back)",
      async () => {
        const x = await make();
        const p = await x.unreachable?.();
        if (!p) throw new Error("a remote provider must offer unreachable()");
        const err = await failure(p, request(x));
        expect(err.code).toBe("MODEL_UNREACHABLE");
        expect(err.transient).toBe(true);
        expect(err.info.provider).toBe(p.name);
      },
    );

    it.skipIf(caps.remote)("without a remote, answers every well-formed request", async () => {
      const x = await make();
      for (const content of ["", "x".repeat(10_000), "ünïcødé ✓"]) {
        const evs = await collect(x.provider, request(x, { messages: [{ role: "user", content }] }));
        expect(evs.at(-1)?.type).toBe("done");
      }
    });
  });
}
