/**
 * The real tools service and agent host (host-service wiring) on SQLite, their model the fake
 * OpenAI server: what the containment suites drive. Web fetches may reach the loopback fake site.
 */
import { afterAll, afterEach, beforeAll } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeSite, type FakeSite } from "./fake-site.js";
import { createModelRouter } from "../../internal/models/router.js";
import { UsageTracker } from "../../internal/agent/usage/usage-tracker.js";
import { createAgentHostService } from "../../internal/agent/host-service.js";
import type { AgentHostImpl } from "../../internal/agent/host.js";
import { createToolsHarness, type ToolsHarness } from "../tools/harness.js";

/** A started tools harness and an agent host on it; close `h` when done. */
export async function createContainmentHost(
  llm: FakeOpenAI,
  extra: Record<string, unknown> = {},
): Promise<{ host: AgentHostImpl; h: ToolsHarness }> {
  const h = await createToolsHarness(
    {
      models: { providers: { f: { base_url: llm.baseUrl, api_key: "sk" } }, primary: "f/m", max_retries: 0 },
      tools: { web: { allow_hosts: ["127.0.0.1"] }, send_message: { allowed_targets: ["test:*"] } },
      ...extra,
    },
    { start: true },
  );
  const ctx = h.core.ctx;
  const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
  const usage = new UsageTracker({ db: ctx.db, config: () => ctx.config() });
  return { host: createAgentHostService(ctx, { router, usage, tools: h.parts, outbox: h.channels }).host, h };
}

/** What {@link containmentSuite} hands a test file: the shared fakes and the current host's harness. */
export interface ContainmentSuite {
  readonly llm: FakeOpenAI;
  readonly site: FakeSite;
  /** The harness of the host the running test set up (throws before `setup`). */
  readonly h: ToolsHarness;
  /** A fresh host for this test; closed after it. */
  setup(extra?: Record<string, unknown>): Promise<AgentHostImpl>;
}

/**
 * Registers one fake model and fake site per file and one host per test (closed and the model's
 * queue reset after each), so the containment suites share their lifecycle instead of copying it.
 */
export function containmentSuite(): ContainmentSuite {
  let llm: FakeOpenAI | undefined;
  let site: FakeSite | undefined;
  let h: ToolsHarness | undefined;
  beforeAll(async () => {
    llm = await startFakeOpenAI();
    site = await startFakeSite();
  });
  afterAll(async () => {
    await site?.close();
    await llm?.close();
  });
  afterEach(async () => {
    llm?.reset();
    await h?.close();
    h = undefined;
  });
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`containmentSuite: ${what} is not ready`);
    return v;
  };
  return {
    get llm() {
      return need(llm, "the fake model");
    },
    get site() {
      return need(site, "the fake site");
    },
    get h() {
      return need(h, "the host (call setup first)");
    },
    async setup(extra = {}) {
      const made = await createContainmentHost(need(llm, "the fake model"), extra);
      h = made.h;
      return made.host;
    },
  };
}
