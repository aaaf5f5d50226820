/**
 * Stable prompt prefix: ten turns of one session through the real agent host (with the built-in
 * tools) and model router against
 * the fake OpenAI server, with the daemon clock moving 90 s between turns (so any clock in the prompt
 * changes). For each turn after the first it measures how many leading bytes of the request (tool
 * list, then messages, serialised as the provider's prefix cache sees them) are identical to the
 * previous turn's request, and whether the system prompt and tool list were byte-identical.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgentHost } from "../internal/agent/host.js";
import { FakeClock } from "../internal/core/clock.js";
import { createModelRouter } from "../internal/models/router.js";
import { ChannelRegistry } from "../internal/channels/registry.js";
import { createToolsService } from "../internal/daemon/tools-service.js";
import { startFakeOpenAI, type RecordedRequest } from "../test/fakes/openai-server.js";
import { createTestCore } from "../test/helpers/core.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";

export interface StablePrefix {
  turns: number;
  /** Mean share of the previous request's bytes that the next request repeats as its prefix. */
  meanPrefixShare: number;
  /** Mean length of that identical prefix, bytes. */
  meanPrefixBytes: number;
  /** The same share over the messages alone (system prompt and history, without the tool list). */
  meanMessagesShare: number;
  systemIdentical: boolean;
  toolsIdentical: boolean;
}

/** The request as a prefix cache sees it: tools first, then the messages in order. */
function serialise(r: RecordedRequest): string {
  return JSON.stringify(r.body?.tools ?? []) + JSON.stringify(r.body?.messages ?? []);
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Runs `turns` turns and measures the prefix reuse between consecutive requests. */
export async function measureStablePrefix(turns = 10): Promise<StablePrefix> {
  const fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-prefix-"));
  const clock = new FakeClock(Date.UTC(2026, 10, 24, 9, 0));
  const core = createTestCore(
    {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "k" } },
        primary: "fake/m",
        max_retries: 0,
      },
    },
    { clock, dir },
  );
  // The daemon's built-in tools (their schemas are most of a request's bytes).
  const tools = createToolsService(core.ctx, { channels: new ChannelRegistry() });
  const host = createAgentHost({
    ctx: core.ctx,
    model: createModelRouter({ config: () => core.ctx.config(), logger: core.ctx.logger, clock }),
    toolsFor: (agent) => tools.registry.forAgent(agent.id, agent.tools),
  });
  try {
    for (let t = 0; t < turns; t++) {
      await host.submit({
        channel: "bench",
        sessionKey: "agent:main:bench:dm:1",
        text: `turn ${t}: what about order ORD-${t}?`,
        originLabel: "bench DM from Ann",
      }).result;
      clock.advance(90_000);
    }
    const reqs = fake.requests.map(serialise);
    const msgs = fake.requests.map((r) => JSON.stringify(r.body?.messages ?? []));
    const shares: number[] = [];
    const bytes: number[] = [];
    const msgShares: number[] = [];
    for (let i = 1; i < reqs.length; i++) {
      const p = commonPrefix(reqs[i - 1]!, reqs[i]!);
      bytes.push(p);
      shares.push(p / reqs[i - 1]!.length);
      msgShares.push(commonPrefix(msgs[i - 1]!, msgs[i]!) / msgs[i - 1]!.length);
    }
    const first = (r: RecordedRequest): string => JSON.stringify(r.body?.messages?.[0] ?? null);
    const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);
    return {
      turns,
      meanPrefixShare: Math.round(mean(shares) * 1000) / 1000,
      meanPrefixBytes: Math.round(mean(bytes)),
      meanMessagesShare: Math.round(mean(msgShares) * 1000) / 1000,
      systemIdentical: fake.requests.every((r) => first(r) === first(fake.requests[0]!)),
      toolsIdentical: fake.requests.every(
        (r) => JSON.stringify(r.body?.tools) === JSON.stringify(fake.requests[0]!.body?.tools),
      ),
    };
  } finally {
    core.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function stablePrefix(_o: BenchOptions): Promise<BenchResult> {
  const r = await measureStablePrefix(10);
  return {
    name: "stable-prefix",
    title:
      "Stable prompt prefix: 10 turns of one session, clock moving 90 s per turn (real host, fake model)",
    rows: [
      {
        metric: "system prompt and tool list byte-identical across turns",
        value: `${r.systemIdentical ? "yes" : "no"} / ${r.toolsIdentical ? "yes" : "no"}`,
        target: "yes / yes",
        pass: r.systemIdentical && r.toolsIdentical,
      },
      {
        metric: "previous request repeated as the next one's prefix (mean share / bytes)",
        value: `${r.meanPrefixShare} / ${r.meanPrefixBytes}`,
        target: ">= 0.9",
        pass: r.meanPrefixShare >= 0.9,
      },
      {
        metric: "the same over the messages alone (system prompt + history), mean share",
        value: String(r.meanMessagesShare),
        target: ">= 0.8",
        pass: r.meanMessagesShare >= 0.8,
      },
    ],
    data: { ...r },
  };
}
