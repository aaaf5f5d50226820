/**
 * Compaction rate: a long session pushed through a 16K-token window with ~400-token turns (a
 * ~200-token question and a ~200-token answer), through the real host compactor (gate, chunking,
 * summariser prompts, lineage in SQLite) and the model router against the fake OpenAI server, whose
 * summaries are ~300 tokens. Counts the summarisation requests per 100 user turns and the prompt size
 * right after each compaction (as a share of the window).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHostCompactor } from "../internal/agent/compaction/host-compactor.js";
import { defaultTokenEstimator } from "../internal/agent/compaction/token-estimator.js";
import { findAgent } from "../internal/agent/agents.js";
import { toChatMessages } from "../internal/agent/history.js";
import { configFromObject } from "../internal/config/load.js";
import { silentLogger } from "../internal/log/logger.js";
import { createModelRouter } from "../internal/models/router.js";
import type { ChatMessage } from "../internal/models/types.js";
import { SessionStore } from "../internal/session/session-store.js";
import { openDatabase } from "../internal/store/db.js";
import { allMigrations } from "../internal/daemon/migrations.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";

const WINDOW = 16_384;
/** System prompt and tool schemas of a "hi" turn (BENCHMARKS.md prompt cost: ~405 + ~2,700 tokens). */
const SYSTEM_CHARS = 1_600;
const TOOL_TOKENS = 2_700;

/** ~`tokens` tokens of varied text (identifiers, numbers), as chat turns carry. */
function text(seed: number, tokens: number): string {
  const words: string[] = [];
  for (let i = 0; words.join(" ").length < tokens * 4; i++)
    words.push(
      i % 7 === 0 ? `INV-${seed}${i}` : ["order", "ship", "the", "parcel", "Berlin", "on", "Friday"][i % 7]!,
    );
  return words.join(" ");
}

export interface CompactionRate {
  turns: number;
  summaryCalls: number;
  compactions: number;
  callsPer100Turns: number;
  /** Estimated prompt tokens right after each compaction, as a share of the window (max, mean). */
  afterShareMax: number;
  afterShareMean: number;
}

/** Runs `turns` user turns through the compactor; returns the counts. */
export async function measureCompactionRate(turns: number): Promise<CompactionRate> {
  const fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-compact-"));
  let summaryCalls = 0;
  fake.setHandler((req) => {
    const sys = req.body?.messages?.[0]?.content;
    if (typeof sys === "string" && /^You (compress|merge|update)/.test(sys)) {
      summaryCalls++;
      return { text: `- Facts and identifiers: ${text(summaryCalls, 300)}` };
    }
    return { text: "ok" };
  });
  const cfg = configFromObject(
    {
      data_dir: join(dir, "data"),
      workspace: join(dir, "workspace"),
      timezone: "UTC",
      models: {
        providers: {
          fake: { base_url: fake.baseUrl, api_key: "k", models: { m: { context_window: WINDOW } } },
        },
        primary: "fake/m",
        max_retries: 0,
      },
      agents: { main: {}, defaults: { compact: { memory_flush: false } } },
    },
    dir,
  );
  const db = openDatabase(cfg.data_dir, { migrations: allMigrations });
  const logger = silentLogger();
  const router = createModelRouter({ config: () => cfg, logger });
  const compactor = createHostCompactor({
    db,
    config: () => cfg,
    model: router,
    contextWindow: () => WINDOW,
    toolTokens: () => TOOL_TOKENS,
  });
  const sessions = new SessionStore(db, () => Date.now());
  const agent = findAgent(cfg, "main")!;
  const system = text(0, SYSTEM_CHARS / 4);
  const key = "agent:main:bench:dm:1";
  sessions.ensure(key, "main");
  const after: number[] = [];
  let compactions = 0;
  try {
    for (let t = 1; t <= turns; t++) {
      const head = sessions.head(key)!;
      sessions.append(head.id, { role: "user", content: text(t, 200) });
      const messages: ChatMessage[] = [
        { role: "system", content: system },
        ...toChatMessages(sessions.messages(head.id)),
      ];
      const out = await compactor.beforeModelCall({
        session: head,
        agent,
        modelRef: "fake/m",
        messages,
        system,
        runId: `r${t}`,
        emit: () => undefined,
      });
      if (out) {
        compactions++;
        after.push((defaultTokenEstimator.messages(out) + TOOL_TOKENS) / WINDOW);
      }
      sessions.append(sessions.head(key)!.id, { role: "assistant", content: text(t + 1000, 200) });
    }
  } finally {
    db.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const r2 = (v: number): number => Math.round(v * 100) / 100;
  return {
    turns,
    summaryCalls,
    compactions,
    callsPer100Turns: r2((summaryCalls * 100) / turns),
    afterShareMax: r2(Math.max(0, ...after)),
    afterShareMean: r2(after.reduce((a, b) => a + b, 0) / Math.max(1, after.length)),
  };
}

export async function compactionRate(_o: BenchOptions): Promise<BenchResult> {
  const r = await measureCompactionRate(300);
  return {
    name: "compaction-rate",
    title: "Compaction rate: 300 turns of ~400 tokens through a 16K window (real compactor, fake model)",
    rows: [
      {
        metric: "summarisation requests per 100 turns",
        value: String(r.callsPer100Turns),
        target: "<= 10",
        pass: r.callsPer100Turns <= 10,
      },
      { metric: "compactions in 300 turns", value: String(r.compactions) },
      {
        metric: "prompt after a compaction, share of the window (max / mean)",
        value: `${r.afterShareMax} / ${r.afterShareMean}`,
        target: "<= 0.5",
        pass: r.afterShareMax <= 0.5,
      },
    ],
    data: { ...r },
  };
}
