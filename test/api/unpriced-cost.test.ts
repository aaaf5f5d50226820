/**
 * Issue 35, "one cost truth": a model without a price is counted at `budgets.default_price` on every
 * surface, as the budgets count it, and marked as an estimate with its reason beside it: the
 * `X-Familiar-Usage-Cost` header (plus `X-Familiar-Usage-Cost-Estimated`), the trace (`/api/traces`,
 * `familiar trace`), `familiar usage`, the console's `usage.daily` / `usage.sessions` and `status`.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { DailyUsage, SessionCost } from "../../internal/gateway/usage-wire.js";
import { formatTraceReport, type TraceReport } from "../../internal/agent/trace-report.js";
import { usageCommand, type UsageReport } from "../../internal/cli/usage.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, type ApiClient } from "./api-client.js";

const TOKEN = "unpriced-cost-token";
/** USD per 1M tokens: 1,000 input + 100 output tokens cost 1000 * 100 + 100 * 500 = $0.15 per 1M. */
const PRICE = { input: 100, output: 500 };
const EXPECTED = (1000 * PRICE.input + 100 * PRICE.output) / 1e6; // $0.15

let fake: FakeOpenAI;
let h: GatewayHarness;
let api: ApiClient;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    gateway: { token: TOKEN },
    config: {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/no-price-model",
        max_retries: 0,
      },
      budgets: { default_price: PRICE },
    },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

function sink(): { stream: Writable; text: () => string } {
  let text = "";
  return {
    stream: new Writable({
      write(c: Buffer, _e, cb) {
        text += c.toString();
        cb();
      },
    }),
    text: () => text,
  };
}

describe("an unpriced model's cost reads the same everywhere", () => {
  it("header, trace, CLI and console agree on ≈$0.15 and say why", async () => {
    fake.enqueue({
      text: "hello",
      usage: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 },
    });
    const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
    const r = await api.req<{ request_id: string; cost: number; cost_estimated_calls: number }>(
      "POST",
      `/api/agents/main/sessions/${s.body.id}/messages`,
      { message: "hi" },
    );
    expect(r.status).toBe(200);
    // The header and body: the default price, never 0, and the reason beside it.
    expect(Number(r.headers.get("x-familiar-usage-cost"))).toBeCloseTo(EXPECTED, 12);
    expect(r.headers.get("x-familiar-usage-cost-estimated")).toBe(
      "1 call(s) of a model without a price in models.pricing, counted at budgets.default_price",
    );
    expect(r.body.cost).toBeCloseTo(EXPECTED, 12);
    expect(r.body.cost_estimated_calls).toBe(1);

    // The trace over the gateway and its text form (what `familiar trace` prints).
    const t = await api.req<TraceReport>("GET", `/api/traces/${r.body.request_id}`);
    expect(t.body.totals.cost).toBeCloseTo(EXPECTED, 12);
    expect(t.body.totals).toMatchObject({ unpriced_calls: 1, default_price: PRICE });
    expect(t.body.calls.find((c) => c.kind === "model")).toMatchObject({ estimated: true });
    const text = formatTraceReport(t.body);
    expect(text).toContain("cost=≈$0.15");
    expect(text).toContain(
      "≈: 1 call(s) to a model without a price in models.pricing, counted at budgets.default_price ($100 input / $500 output per 1M tokens)",
    );

    // `familiar usage` (reads the database).
    const json = sink();
    await usageCommand({ config: h.configPath, json: true }, json.stream);
    const report = JSON.parse(json.text()) as UsageReport;
    expect(report.total.cost).toBeCloseTo(EXPECTED, 12);
    expect(report.total.unpricedCalls).toBe(1);
    const human = sink();
    await usageCommand({ config: h.configPath }, human.stream);
    expect(human.text()).toMatch(/total\s+1\s+1,000\s+0\s+100\s+1,100\s+≈\$0\.15/);
    expect(human.text()).toContain("≈: 1 call(s) to a model without a price");

    // The console's reports and `status` (over the websocket, as the console asks).
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "cost-test" });
    try {
      const daily = await c.request<DailyUsage>("usage.daily", { days: 7 });
      expect(daily.today.cost).toBeCloseTo(EXPECTED, 12);
      expect(daily.today.estimatedCalls).toBe(1);
      expect(daily.defaultPrice).toEqual(PRICE);
      const top = await c.request<{ sessions: SessionCost[] }>("usage.sessions", {});
      expect(top.sessions[0]?.cost).toBeCloseTo(EXPECTED, 12);
      expect(top.sessions[0]?.estimatedCalls).toBe(1);
      const status = await c.request<{ tokensToday: { cost: number; estimatedCalls: number } }>("status");
      expect(status.tokensToday.cost).toBeCloseTo(EXPECTED, 12);
      expect(status.tokensToday.estimatedCalls).toBe(1);
    } finally {
      await c.close();
    }
  });
});
