/**
 * `familiar memory status|reindex` against a real daemon (gateway with a token, the fake
 * `/v1/embeddings` server as the embedding provider), and embedding calls in `familiar usage`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryReindexCommand, memoryStatusCommand } from "../../internal/cli/memory.js";
import { usageCommand } from "../../internal/cli/usage.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import { startFakeEmbeddings, type FakeEmbeddings } from "../fakes/embeddings-server.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../gateway/harness.js";

const TOKEN = "memory-cli-token-0123456789";
let h: GatewayHarness;
let emb: FakeEmbeddings;
let chat: FakeOpenAI;

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (c: Buffer) => (text += c.toString()));
  return { stream, text: () => text };
}

beforeAll(async () => {
  emb = await startFakeEmbeddings();
  chat = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake: chat,
    gateway: { token: TOKEN },
    config: {
      models: {
        providers: { fake: { base_url: chat.baseUrl, api_key: "sk-fake" }, emb: { base_url: emb.baseUrl } },
        primary: "fake/test-model",
        max_retries: 0,
        pricing: { "emb/fake-small": { input: 0.02, output: 0 } },
      },
      memory: { embeddings: { provider: "emb", model: "fake-small" } },
    },
  });
  writeFileSync(
    join(h.dir, "workspace", "MEMORY.md"),
    "# Memory\n\n## Car\nMy automobile is a blue Skoda.\n",
  );
});

afterAll(async () => {
  await h?.close();
  await emb?.close();
  await chat?.close();
});

describe("familiar memory", () => {
  it("reindex and status go through the gateway with the token", async () => {
    const out = capture();
    await memoryReindexCommand({ config: h.configPath, token: TOKEN }, out.stream);
    expect(out.text()).toContain("re-embedding");
    const status = await waitFor(async () => {
      const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "t" });
      try {
        const s = await c.request<{ vectors: number; pending: number }>("memory.status");
        return s.vectors === 1 && s.pending === 0 ? s : undefined;
      } finally {
        await c.close();
      }
    });
    expect(status).toMatchObject({ files: 1, chunks: 1, dimensions: 128, storedModel: "emb/fake-small" });
    const text = capture();
    await memoryStatusCommand({ config: h.configPath, token: TOKEN }, text.stream);
    expect(text.text()).toContain("embeddings   emb/fake-small ok");
    expect(text.text()).toContain("vectors      1 stored, 0 pending, 128 dimensions (emb/fake-small)");
  });

  it("refuses a stranger: no token or a wrong token gets nothing", async () => {
    const before = emb.requests["fake-small"] ?? 0;
    for (const token of [undefined, "wrong-token"]) {
      const out = capture();
      const err = capture();
      process.exitCode = undefined;
      await memoryStatusCommand(
        { config: "/nonexistent.yaml", url: h.wsUrl, ...(token ? { token } : {}) },
        out.stream,
        err.stream,
      );
      await memoryReindexCommand(
        { config: "/nonexistent.yaml", url: h.wsUrl, ...(token ? { token } : {}) },
        out.stream,
        err.stream,
      );
      expect(out.text()).toBe("");
      expect(err.text()).toMatch(/familiar memory: .*(token|unauthori)/i);
      expect(process.exitCode).toBe(1);
    }
    process.exitCode = undefined;
    expect(emb.requests["fake-small"] ?? 0).toBe(before);
  });

  it("embedding calls show up in familiar usage with their cost", async () => {
    const out = capture();
    await usageCommand({ config: h.configPath, json: true }, out.stream);
    const report = JSON.parse(out.text()) as {
      byModel: { provider: string; model: string; input: number; cost: number }[];
    };
    const row = report.byModel.find((m) => m.provider === "emb" && m.model === "fake-small");
    expect(row?.input).toBeGreaterThan(0);
    expect(row?.cost).toBeCloseTo(((row?.input ?? 0) * 0.02) / 1_000_000, 12);
  });

  it("a hot reload with another embedding model rebuilds the vectors in the background", async () => {
    const cfg = JSON.parse(readFileSync(h.configPath, "utf8")) as { memory: Record<string, unknown> };
    cfg.memory = { embeddings: { provider: "emb", model: "fake-other", dimensions: 64 } };
    writeFileSync(h.configPath, JSON.stringify(cfg));
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "t" });
    try {
      expect(await c.request("config.reload")).toMatchObject({ changed: ["memory"] });
      const s = await waitFor(async () => {
        const st = await c.request<{ storedModel: string; vectors: number; pending: number }>(
          "memory.status",
        );
        return st.storedModel === "emb/fake-other" && st.vectors === 1 && st.pending === 0 ? st : undefined;
      });
      expect(s).toMatchObject({ dimensions: 64, embeddings: { state: "ok", model: "emb/fake-other" } });
      expect(emb.inputs["fake-other"]).toBe(1);
    } finally {
      await c.close();
    }
  });
});
