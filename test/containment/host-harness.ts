/**
 * The real tools service and agent host (host-service wiring) on SQLite, their model the fake
 * OpenAI server: what the containment suites drive. Web fetches may reach the loopback fake site.
 */
import type { FakeOpenAI } from "../fakes/openai-server.js";
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
