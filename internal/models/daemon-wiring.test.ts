import { afterEach, describe, expect, it } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { buildServices } from "../daemon/services.js";
import { HttpServer } from "../gateway/http-server.js";
import { ChannelRegistry } from "../channels/registry.js";
import type { ModelRouter } from "./router.js";
import type { ModelStreamEvent } from "./types.js";

let core: TestCore | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  core?.close();
  core = undefined;
  await fake?.close();
  fake = undefined;
});

async function collect(r: ModelRouter): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of r.stream({ messages: [{ role: "user", content: "ping" }] })) out.push(ev);
  return out;
}

describe("daemon wiring of the models section", () => {
  it("registers the router and usage tracker; the router follows config reloads", async () => {
    core = createTestCore({ gateway: { enabled: false } });
    const { parts } = await buildServices(
      core.ctx,
      new HttpServer(() => ({ status: "ok" })),
      new ChannelRegistry(),
      core.manager,
    );
    const router = parts.router;
    const usage = parts.usage;
    expect(router.usingEcho()).toBe(true);
    expect(router.status()).toMatchObject({ state: "degraded", usingEcho: true, chain: ["echo/echo"] });
    const first = await collect(router);
    expect(first.at(-1)).toMatchObject({ type: "done", provider: "echo" });

    fake = await startFakeOpenAI();
    core.setConfig({
      gateway: { enabled: false },
      models: { providers: { local: { base_url: fake.baseUrl } }, primary: "local/qwen3" },
    });
    expect(router.usingEcho()).toBe(false);
    const second = await collect(router);
    expect(second.at(-1)).toMatchObject({ type: "done", provider: "local", model: "qwen3" });
    expect(fake.requests).toHaveLength(1);

    usage.record({
      provider: "local",
      model: "qwen3",
      usage: { input: 5, output: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 7 },
    });
    expect(usage.aggregate()).toMatchObject({ calls: 1, total: 7 });
  });
});
