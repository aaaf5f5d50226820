/**
 * Call trees over `/api` and `familiar trace`: a turn whose model delegates (built-in `delegate` tool,
 * mode sync) to a second agent. The response carries the usage and cost summed over the whole tree;
 * `GET /api/traces/{id}` and the CLI (reading the database, and via the gateway) list every call with
 * its parent links and depth.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { traceCommand } from "../../internal/cli/trace.js";
import type { TraceReport } from "../../internal/agent/trace-report.js";
import { apiClient, type ApiClient } from "./api-client.js";

const run = promisify(execFile);
const TOKEN = "api-trace-token";
let h: GatewayHarness;
let api: ApiClient;

let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    gateway: { token: TOKEN },
    config: {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/test-model",
        // One retry after an upstream error (a 400 is never retried).
        max_retries: 1,
        // USD per 1M tokens
        pricing: { "fake/test-model": { input: 1, output: 2 } },
      },
      agents: {
        default: "main",
        main: {},
        helper: { description: "knows capitals" },
        // A model without a price: its turns are counted at budgets.default_price, marked as estimates.
        guesser: { model: "fake/unpriced-model" },
        // main -> helper is depth 1; anything the helper delegates would be depth 2.
        defaults: { subagents: { max_depth: 1 } },
      },
    },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

const usage = (input: number, output: number): Record<string, number> => ({
  prompt_tokens: input,
  completion_tokens: output,
  total_tokens: input + output,
});

describe("call trees", () => {
  let requestId = "";
  let report: TraceReport;

  it("sums usage over a delegated sub-turn in the body and the X-Familiar-Usage-* headers", async () => {
    h.fake.enqueue({
      toolCalls: [
        {
          id: "call_d",
          name: "delegate",
          arguments: { agent: "helper", message: "What is the capital of France?", mode: "sync" },
        },
      ],
      usage: usage(100, 10),
    });
    h.fake.enqueue({ text: "Paris", usage: usage(40, 4) });
    h.fake.enqueue({ text: "The helper says Paris.", usage: usage(150, 8) });
    const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
    const r = await api.req<{
      assistant: { content: string };
      request_id: string;
      usage: { input: number; output: number };
      sub_calls: number;
      cost: number;
    }>("POST", `/api/agents/main/sessions/${s.body.id}/messages`, {
      message: "Ask the helper for France's capital",
    });
    expect(r.status).toBe(200);
    expect(r.body.assistant.content).toBe("The helper says Paris.");
    // The helper's call went to the model with the delegated message.
    expect(JSON.stringify(h.fake.requests[1]?.body?.messages)).toContain("What is the capital of France?");
    expect(r.body.usage).toMatchObject({ input: 290, output: 22 });
    expect(r.body.sub_calls).toBe(4); // three model calls and the delegate tool call
    expect(r.headers.get("x-familiar-usage-input")).toBe("290");
    expect(r.headers.get("x-familiar-usage-output")).toBe("22");
    expect(r.headers.get("x-familiar-usage-subcalls")).toBe("4");
    const cost = (290 * 1 + 22 * 2) / 1e6;
    expect(r.body.cost).toBeCloseTo(cost, 12);
    expect(Number(r.headers.get("x-familiar-usage-cost"))).toBeCloseTo(cost, 12);
    expect(r.headers.get("x-familiar-request-id")).toBe(r.body.request_id);
    requestId = r.body.request_id;
  });

  it("GET /api/traces/{id} lists the tree with parent links, depth and summed usage", async () => {
    const t = await api.req<TraceReport>("GET", `/api/traces/${requestId}`);
    expect(t.status).toBe(200);
    report = t.body;
    expect(report.root_request_id).toBe(requestId);
    expect(report.requests).toHaveLength(2);
    const [root, child] = report.requests;
    expect(root).toMatchObject({
      request_id: requestId,
      parent_request_id: null,
      depth: 0,
      agent_id: "main",
    });
    expect(child).toMatchObject({
      parent_request_id: requestId,
      depth: 1,
      agent_id: "helper",
      model_calls: 1,
    });
    expect(child?.usage).toMatchObject({ input: 40, output: 4 });
    expect(root).toMatchObject({ model_calls: 2, tool_calls: 1 });
    expect(root?.usage).toMatchObject({ input: 250, output: 18 });

    const delegate = report.calls.find((c) => c.kind === "tool");
    expect(delegate).toMatchObject({
      name: "delegate",
      request_id: requestId,
      parent_request_id: requestId,
      depth: 0,
    });
    const childModel = report.calls.filter((c) => c.kind === "model" && c.request_id === child?.request_id);
    expect(childModel).toHaveLength(1);
    expect(childModel[0]).toMatchObject({ parent_request_id: child?.request_id, depth: 1 });
    expect(report.totals.cost).toBeCloseTo((290 + 44) / 1e6, 12);
    expect(child?.cost).toBeCloseTo((40 + 8) / 1e6, 12);
    expect(report.totals).toMatchObject({
      unpriced_calls: 0,
      usage: { input: 290, output: 22 },
      sub_calls: 4,
      model_calls: 3,
      tool_calls: 1,
      requests: 2,
      max_depth: 1,
    });

    // Any request of the tree finds the whole tree.
    const viaChild = await api.req<TraceReport>("GET", `/api/traces/${child?.request_id}`);
    expect(viaChild.body.root_request_id).toBe(requestId);
    expect(viaChild.body.calls).toHaveLength(report.calls.length);
  });

  it("familiar trace reads the same tree from the database (child process) and via the gateway", async () => {
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "cmd/familiar.ts", "trace", requestId, "--json", "--config", h.configPath],
      { cwd: process.cwd(), timeout: 60_000 },
    );
    const fromDb = JSON.parse(stdout) as TraceReport;
    expect(fromDb.totals).toEqual(report.totals);
    expect(fromDb.calls.map((c) => [c.kind, c.request_id, c.parent_request_id, c.depth])).toEqual(
      report.calls.map((c) => [c.kind, c.request_id, c.parent_request_id, c.depth]),
    );

    const human = await run(
      process.execPath,
      ["--import", "tsx", "cmd/familiar.ts", "trace", requestId, "--config", h.configPath],
      { cwd: process.cwd(), timeout: 60_000 },
    );
    expect(human.stdout).toContain(`trace ${requestId}`);
    expect(human.stdout).toMatch(/turn\s+helper .*depth=1/);
    expect(human.stdout).toContain("tool  delegate");
    expect(human.stdout).toContain("in=290 out=22");

    let text = "";
    const sink = new Writable({
      write(c: Buffer, _e, cb) {
        text += c.toString();
        cb();
      },
    });
    await traceCommand(requestId, { config: h.configPath, url: h.base, token: TOKEN, json: true }, sink);
    expect((JSON.parse(text) as TraceReport).totals).toEqual(report.totals);

    const missing = await run(
      process.execPath,
      ["--import", "tsx", "cmd/familiar.ts", "trace", "no-such-id", "--config", h.configPath],
      { cwd: process.cwd(), timeout: 60_000 },
    ).catch((err: { code: number; stderr: string }) => err);
    expect(missing).toMatchObject({ code: 1 });
    expect((missing as { stderr: string }).stderr).toContain("no trace for request no-such-id");
  });

  it("fails a delegation past the depth limit with recursion_depth_exceeded, recorded in the tree", async () => {
    h.fake.enqueue({
      toolCalls: [
        {
          id: "call_1",
          name: "delegate",
          arguments: { agent: "helper", message: "dig deeper", mode: "sync" },
        },
      ],
    });
    h.fake.enqueue({
      toolCalls: [
        { id: "call_2", name: "delegate", arguments: { agent: "main", message: "and deeper", mode: "sync" } },
      ],
    });
    h.fake.enqueue({ text: "I could not go deeper." });
    h.fake.enqueue({ text: "The helper hit the depth limit." });
    const before = h.fake.requests.length;
    const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
    const r = await api.req<{ request_id: string; assistant: { content: string } }>(
      "POST",
      `/api/agents/main/sessions/${s.body.id}/messages`,
      { message: "recurse" },
    );
    expect(r.body.assistant.content).toBe("The helper hit the depth limit.");
    // The helper's second model call saw the refusal as its tool result.
    const helperRetry = JSON.stringify(h.fake.requests[before + 2]?.body?.messages ?? []);
    expect(helperRetry).toContain("recursion_depth_exceeded");
    const t = await api.req<TraceReport>("GET", `/api/traces/${r.body.request_id}`);
    const child = t.body.requests.find((q) => q.depth === 1);
    const refused = t.body.calls.find((c) => c.kind === "tool" && c.request_id === child?.request_id);
    expect(refused).toMatchObject({ name: "delegate", status: "error", depth: 1 });
    expect(t.body.totals).toMatchObject({ requests: 2, max_depth: 1, model_calls: 4, tool_calls: 2 });
  });

  it("GET /api/traces lists recent turns: newest, costliest, failed, with a clear error for a bad filter", async () => {
    // A failed turn: the model answers 500 and retries are off.
    h.fake.enqueue({ error: { status: 400, message: "upstream refused the request" } });
    const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
    await api.req("POST", `/api/agents/main/sessions/${s.body.id}/messages`, { message: "this one fails" });
    type Item = {
      request_id: string;
      status: string;
      cost: number;
      tokens: number;
      model_calls: number;
      turns: number;
      error: string | null;
      duration_ms: number | null;
    };
    const newest = await api.req<{ traces: Item[] }>("GET", "/api/traces?limit=10");
    expect(newest.status).toBe(200);
    expect(newest.body.traces.length).toBeGreaterThanOrEqual(3);
    expect(newest.body.traces[0]).toMatchObject({ status: "error" });
    expect(newest.body.traces[0]!.error).toMatch(/.+/);
    const costliest = await api.req<{ traces: Item[] }>("GET", "/api/traces?sort=costliest");
    const costs = costliest.body.traces.map((t) => t.cost);
    expect(costs).toEqual([...costs].sort((a, b) => b - a));
    // A delegated tree (the earlier tests): two turns, its model calls priced from models.pricing.
    expect(costliest.body.traces[0]!.turns).toBe(2);
    expect(costliest.body.traces[0]!.model_calls).toBeGreaterThanOrEqual(3);
    expect(costliest.body.traces[0]!.cost).toBeGreaterThan(0);
    // Its model calls say where their prompt went, and each is a span (a bar on the timeline).
    const tree = await api.req<TraceReport>("GET", `/api/traces/${costliest.body.traces[0]!.request_id}`);
    const models = tree.body.calls.filter((c) => c.kind === "model");
    expect(models.length).toBeGreaterThan(0);
    for (const m of models) {
      expect(m.prompt).toBeDefined();
      expect(m.ended_at).toBeGreaterThanOrEqual(m.started_at);
    }
    // The first call of the root turn: the new message is the owner's, there is a system prompt and tools.
    expect(models[0]!.prompt).toMatchObject({ tool_results: 0 });
    expect(models[0]!.prompt!.new_message).toBeGreaterThan(0);
    expect(models[0]!.prompt!.system).toBeGreaterThan(0);
    expect(models[0]!.prompt!.tools).toBeGreaterThan(0);
    // The call after a tool call carries its result.
    expect(models.some((m) => m.prompt!.tool_results > 0)).toBe(true);
    const failed = await api.req<{ traces: Item[] }>("GET", "/api/traces?status=failed");
    expect(failed.body.traces.length).toBeGreaterThan(0);
    expect(failed.body.traces.every((t) => t.status === "error" || t.status === "aborted")).toBe(true);
    const slowest = await api.req<{ traces: Item[] }>("GET", "/api/traces?sort=slowest");
    const durs = slowest.body.traces.map((t) => t.duration_ms ?? -1);
    expect(durs).toEqual([...durs].sort((a, b) => b - a));
    const bad = await api.req<{ error: { code: string; message: string } }>(
      "GET",
      "/api/traces?sort=cheapest",
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_sort" });
    expect(bad.body.error.message).toBe('sort must be newest, slowest or costliest; got "cheapest"');
  });

  it("GET /api/traces names each turn by its question, counts retried calls and estimates unpriced ones", async () => {
    type Item = {
      request_id: string;
      question: string | null;
      session_key: string | null;
      retries: number;
      waiting: boolean;
      cost: number;
      estimated_cost: number;
      unpriced_calls: number;
    };
    // An upstream hiccup: the router retries the call once.
    h.fake.enqueue(
      { error: { status: 502, message: "bad gateway (test)" } },
      { text: "second try", usage: usage(10, 2) },
    );
    const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
    await api.req("POST", `/api/agents/main/sessions/${s.body.id}/messages`, {
      message: "  What is\n the   weather? ",
    });
    h.fake.enqueue({ text: "a guess", usage: usage(1000, 500) });
    const g = await api.req<{ id: string }>("POST", "/api/agents/guesser/sessions", {});
    await api.req("POST", `/api/agents/guesser/sessions/${g.body.id}/messages`, {
      message: "Guess a number",
    });
    const list = await api.req<{ traces: Item[] }>("GET", "/api/traces?limit=5");
    const [guess, retried] = list.body.traces;
    expect(retried).toMatchObject({ question: "What is the weather?", retries: 1, waiting: false });
    expect(retried!.session_key).toMatch(/^agent:main:gateway:/);
    // Priced: the estimate is the price.
    expect(retried!.estimated_cost).toBe(retried!.cost);
    expect(guess).toMatchObject({ question: "Guess a number", retries: 0, unpriced_calls: 1 });
    // One ledger figure (docs/costs.md): budgets.default_price times the tokens, counted and marked
    // estimated; never free.
    expect(guess!.cost).toBeGreaterThan(0);
    expect(guess!.estimated_cost).toBe(guess!.cost);
  });

  it("GET /api/traces refuses a stranger without the token, and a wrong token", async () => {
    const none = await fetch(`${h.base}/api/traces`);
    expect(none.status).toBe(401);
    expect(await none.text()).not.toContain("request_id");
    const wrong = await fetch(`${h.base}/api/traces`, { headers: { authorization: "Bearer not-the-token" } });
    expect(wrong.status).toBe(401);
  });
});
