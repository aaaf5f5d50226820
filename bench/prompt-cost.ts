/**
 * Prompt cost:
 * - what a plain "hi" turn sends to the model with the shipped workspace template (workspace/) and the
 *   default tools: characters of the system prompt, of the tool schemas and of the whole request
 *   body, captured at the fake OpenAI server, with a token estimate (internal token estimator);
 * - model calls made by an idle day of heartbeats with the shipped (empty) HEARTBEAT.md: the daemon
 *   runs with a short `heartbeat.every` until it has ticked at least `heartbeatTicks` times (48 ticks
 *   are a day at the default 30m), counting the rows in `heartbeat_runs` and the requests at the fake.
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { defaultTokenEstimator, estimateTextTokens } from "../internal/agent/compaction/token-estimator.js";
import type { ChatMessage } from "../internal/models/types.js";
import { chatTurn } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup } from "./lib/setup.js";

interface HiCost {
  bodyChars: number;
  systemChars: number;
  toolsChars: number;
  tools: number;
  messages: number;
  systemTokens: number;
  toolsTokens: number;
  promptTokens: number;
}

async function hiTurn(o: BenchOptions): Promise<HiCost> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  try {
    await chatTurn(s.daemon.url, "prompt-cost", "hi");
    const req = s.fake.requests[s.fake.requests.length - 1];
    if (!req?.body) throw new Error("no request captured");
    const messages = (req.body.messages ?? []) as ChatMessage[];
    const system = messages
      .filter((m) => m.role === "system")
      .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
      .join("\n");
    const tools = JSON.stringify(req.body.tools ?? []);
    const body = JSON.stringify(req.body);
    return {
      bodyChars: body.length,
      systemChars: system.length,
      toolsChars: tools.length,
      tools: (req.body.tools ?? []).length,
      messages: messages.length,
      systemTokens: estimateTextTokens(system),
      toolsTokens: estimateTextTokens(tools),
      promptTokens: defaultTokenEstimator.messages(messages) + estimateTextTokens(tools),
    };
  } finally {
    await s.close();
  }
}

async function idleHeartbeats(
  o: BenchOptions,
): Promise<{ ticks: number; modelCalls: number; reasons: string[] }> {
  const s = await startGatewaySetup({
    nodeFlags: o.nodeFlags,
    config: { heartbeat: { every: "100ms", target: "last" } },
  });
  const db = new Database(join(s.daemon.dataDir, "familiar.db"), { readonly: true, fileMustExist: true });
  try {
    const count = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM heartbeat_runs");
    const deadline = Date.now() + 60_000;
    while ((count.get()?.n ?? 0) < o.heartbeatTicks && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const reasons = db
      .prepare<[], { reason: string | null; status: string; n: number }>(
        "SELECT status, reason, COUNT(*) AS n FROM heartbeat_runs GROUP BY status, reason",
      )
      .all()
      .map((r) => `${r.n}x ${r.status}: ${r.reason ?? ""}`);
    return { ticks: count.get()?.n ?? 0, modelCalls: s.fake.requests.length, reasons };
  } finally {
    db.close();
    await s.close();
  }
}

export async function promptCost(o: BenchOptions): Promise<BenchResult> {
  const hi = await hiTurn(o);
  const hb = await idleHeartbeats(o);
  return {
    name: "prompt-cost",
    title: 'Prompt cost: a "hi" turn (shipped workspace, default tools) and an idle day of heartbeats',
    rows: [
      {
        metric: '"hi" turn: system prompt chars (est. tokens)',
        value: `${hi.systemChars} (${hi.systemTokens})`,
        target: "< 6000 chars prompt (ours)",
        pass: hi.systemChars < 6000,
      },
      {
        metric: `"hi" turn: ${hi.tools} tool schemas, chars (est. tokens)`,
        value: `${hi.toolsChars} (${hi.toolsTokens})`,
      },
      {
        metric: '"hi" turn: whole request body chars / est. prompt tokens',
        value: `${hi.bodyChars} / ${hi.promptTokens}`,
        target: "<= 6144 chars (issue 38)",
        pass: hi.bodyChars <= 6144,
      },
      {
        metric: `idle heartbeats (${hb.ticks} ticks >= 48 = one day at 30m): model calls`,
        value: String(hb.modelCalls),
        target: "0",
        pass: hb.modelCalls === 0 && hb.ticks >= 48,
      },
    ],
    data: { hi, heartbeat: hb },
  };
}
