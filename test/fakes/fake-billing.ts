/**
 * The bill of the fake OpenAI-compatible provider (openai-server.ts), for checking the ledger against
 * what a provider charges: each model bills in one of the shapes real providers use, and the fake
 * keeps every billed call and writes the exports an owner downloads.
 *
 * - `reported`: the usage object carries the provider's own `cost` (OpenRouter's shape);
 * - `tokens`: counts only, with cached input and reasoning tokens (OpenAI's shape); the fake bills
 *   them at its own price: cached input at `cache_read`, reasoning as output (it is in
 *   `completion_tokens`);
 * - `nothing`: no usage at all; the fake counts the text it received and sent, 4 characters a token
 *   (what a provider without usage reporting bills is its own count; this fake's count is that).
 *
 * One account can be shared by several fake servers (chat, embeddings-server.ts, audio-server.ts),
 * as one provider account bills chat, embeddings per token and transcription per minute.
 */

/** USD per 1M tokens, or per minute of audio. */
export interface FakePrice {
  input: number;
  output: number;
  cache_read?: number;
  per_minute?: number;
}

export type BillingShape = "reported" | "tokens" | "nothing";

/** One billed call. */
export interface BilledCall {
  id: string;
  at: number;
  model: string;
  input: number;
  cached: number;
  output: number;
  reasoning: number;
  /** Audio seconds of a transcription (billed per minute). */
  seconds?: number;
  cost: number;
}

/** A provider's billing: per model shape and price, and the calls billed so far. */
export class FakeBilling {
  readonly calls: BilledCall[] = [];
  constructor(
    readonly models: Record<string, { shape: BillingShape; price: FakePrice }>,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Bills one call; returns the cost. */
  bill(c: Omit<BilledCall, "cost" | "at">): number {
    const cost = this.parts(c).reduce((a, [, usd]) => a + usd, 0);
    this.calls.push({ ...c, at: this.now(), cost });
    return cost;
  }

  /** Whether this account bills `model` (the servers bill only the models it names). */
  bills(model: string): boolean {
    return this.models[model] !== undefined;
  }

  /** A call's line items as the provider itemises them (OpenAI's cost export). */
  private parts(c: Omit<BilledCall, "cost" | "at">): [string, number][] {
    const p = this.models[c.model]?.price ?? { input: 0, output: 0 };
    if (c.seconds !== undefined) return [["audio", ((p.per_minute ?? 0) * c.seconds) / 60]];
    return [
      ["input", (Math.max(0, c.input - c.cached) * p.input) / 1e6],
      ["cached input", (c.cached * (p.cache_read ?? p.input)) / 1e6],
      ["output", (c.output * p.output) / 1e6],
    ];
  }

  /** Total USD, and per model. */
  total(model?: string): number {
    return this.calls.filter((c) => !model || c.model === model).reduce((a, c) => a + c.cost, 0);
  }

  /** OpenRouter's activity export: one row per generation. */
  openRouterCsv(): string {
    const head =
      "generation_id,created_at,cost_total,cost_web_search,cost_cache,cost_file_processing,byok_usage_inference," +
      "tokens_prompt,tokens_completion,tokens_reasoning,tokens_cached,model_permaslug,provider_name," +
      "finish_reason_normalized,generation_time_ms,time_to_first_token_ms";
    const rows = this.calls.map((c) =>
      [
        c.id,
        new Date(c.at).toISOString().replace("T", " ").replace("Z", ""),
        c.cost.toFixed(10),
        0,
        0,
        0,
        0,
        c.input,
        c.output,
        c.reasoning,
        c.cached,
        c.model,
        "Fake",
        "stop",
        10,
        5,
      ].join(","),
    );
    return [head, ...rows].join("\n") + "\n";
  }

  /** OpenAI's cost export: per UTC day and line item (`<model>, input` / `<model>, output`). */
  openAiCostsCsv(): string {
    const sums = new Map<string, { start: number; item: string; usd: number }>();
    for (const c of this.calls) {
      const start = Math.floor(c.at / 86_400_000) * 86_400;
      for (const [part, usd] of this.parts(c)) {
        const item = `${c.model}, ${part}`;
        const key = `${start}|${item}`;
        const s = sums.get(key) ?? { start, item, usd: 0 };
        s.usd += usd;
        sums.set(key, s);
      }
    }
    const head = "start_time,end_time,amount_value,amount_currency,line_item,project_id,organization_id";
    const rows = [...sums.values()].map(
      (s) => `${s.start},${s.start + 86_400},${s.usd.toFixed(10)},usd,"${s.item}",proj_fake,org_fake`,
    );
    return [head, ...rows].join("\n") + "\n";
  }
}

/** Characters of the text of a chat request (messages and tool specs), as the estimate counts them. */
export function requestChars(body: {
  messages?: { content?: unknown; tool_calls?: unknown }[];
  tools?: unknown[];
}): number {
  let n = 0;
  for (const m of body.messages ?? []) {
    if (typeof m.content === "string") n += m.content.length;
    else if (Array.isArray(m.content))
      for (const p of m.content as { type?: string; text?: string }[])
        if (p.type === "text") n += (p.text ?? "").length;
    for (const c of (m.tool_calls ?? []) as { function?: { name?: string; arguments?: string } }[])
      n += (c.function?.name ?? "").length + (c.function?.arguments ?? "").length;
  }
  // The tool specs as OpenAI's wire carries them, unwrapped to name, description and parameters.
  if (body.tools && body.tools.length > 0)
    n += JSON.stringify(
      (body.tools as { function?: unknown }[]).map((t) => (t.function ? t.function : t)),
    ).length;
  return n;
}
