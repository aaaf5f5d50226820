/**
 * Agent files through the running daemon (`familiar run` as a child process, the fake model): an agent
 * file added, edited, broken, fixed and removed while the daemon runs changes the agent list live
 * (`GET /api/agents`, `GET /v1/models`), a broken file shows on /healthz with its path and key while
 * the other agents keep answering, and a file agent's fields reach the model. Every wait polls a
 * condition; nothing sleeps for a fixed time.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
import { waitFor } from "../gateway/harness.js";

const TOKEN = "agents-test-token";
let llm: FakeOpenAI;
beforeAll(async () => {
  llm = await startFakeOpenAI();
});
afterAll(async () => {
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
  llm.reset();
});

interface Health {
  status: string;
  services: Record<string, { state: string; errors?: { path: string; key?: string; message: string }[] }>;
}

function client(d: DaemonProcess): {
  get: (path: string) => Promise<{ status: number; body: Record<string, unknown> }>;
  health: () => Promise<Health>;
  chat: (agent: string, text: string) => Promise<string>;
} {
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  return {
    async get(path) {
      const r = await fetch(`${d.url}${path}`, { headers });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    },
    async health() {
      return (await (await fetch(`${d.url}/healthz`)).json()) as Health;
    },
    async chat(agent, text) {
      const r = await fetch(`${d.url}/v1/chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: `familiar/${agent}`, messages: [{ role: "user", content: text }] }),
      });
      const body = (await r.json()) as { choices?: { message: { content: string } }[] };
      return body.choices?.[0]?.message.content ?? `HTTP ${r.status}: ${JSON.stringify(body)}`;
    },
  };
}

function daemonConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    models: {
      providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
      primary: "fake/primary",
      max_retries: 0,
    },
    gateway: { token: TOKEN },
    ...extra,
  };
}

describe("agent files in the running daemon", () => {
  it("add, edit, break, fix and remove a file while the daemon runs", async () => {
    const d = await startDaemonProcess({ config: daemonConfig() });
    const c = client(d);
    const dir = join(d.workspace, "agents");
    const file = join(dir, "scout.yaml");
    // The folder did not exist before the start; the daemon created it to watch it.
    writeFileSync(
      file,
      [
        "name: scout",
        "model: fake/scout-model",
        "description: finds things",
        "system_prompt: SCOUT-PROMPT-V1",
        "max_tokens: 321",
        "temperature: 0.4",
        "capabilities: [{name: search, tags: [web], strength: 0.7}]",
        "compact: {strategy: manual, keep_last_n: 3}",
      ].join("\n"),
    );
    const scout = await waitFor(async () => {
      const r = await c.get("/api/agents/scout");
      return r.status === 200 ? r.body : undefined;
    });
    expect(scout).toMatchObject({ id: "scout", source: "file", path: file, description: "finds things" });
    const models = await c.get("/v1/models");
    expect(JSON.stringify(models.body)).toContain("familiar/scout");

    // Its fields reach the model: model, system prompt, max_tokens, temperature.
    llm.enqueue({ text: "found it" });
    expect(await c.chat("scout", "find x")).toBe("found it");
    const req = llm.requests.at(-1);
    expect(req?.model).toBe("scout-model");
    expect(req?.body?.max_tokens).toBe(321);
    expect(req?.body?.temperature).toBe(0.4);
    expect(JSON.stringify(req?.body?.messages?.[0])).toContain("SCOUT-PROMPT-V1");

    // Edit: the running daemon picks the new definition up.
    writeFileSync(
      file,
      "name: scout\nmodel: fake/scout-model\ndescription: finds more\nsystem_prompt: SCOUT-PROMPT-V2\n",
    );
    await waitFor(async () => (await c.get("/api/agents/scout")).body.description === "finds more");
    llm.enqueue({ text: "v2" });
    expect(await c.chat("scout", "again")).toBe("v2");
    expect(JSON.stringify(llm.requests.at(-1)?.body?.messages?.[0])).toContain("SCOUT-PROMPT-V2");

    // Break it (and add a good one): /healthz names the file and the key; the good one answers.
    writeFileSync(join(dir, "helper.yaml"), "name: helper\ndescription: still fine\n");
    writeFileSync(file, "name: scout\ntemperature: hot\n");
    const broken = await waitFor(async () => {
      const h = await c.health();
      return h.services.agents?.state === "degraded" ? h : undefined;
    });
    expect(broken.services.agents?.errors).toEqual([
      { path: file, key: "temperature", message: expect.stringMatching(/^temperature: expected/) },
    ]);
    expect((await c.get("/api/agents/scout")).status).toBe(404);
    await waitFor(async () => (await c.get("/api/agents/helper")).status === 200);
    llm.enqueue({ text: "helper here" });
    expect(await c.chat("helper", "hi")).toBe("helper here");

    // Fix it: healthy again, and the agent is back.
    writeFileSync(file, "name: scout\ntemperature: 0.9\n");
    await waitFor(async () => (await c.health()).services.agents?.state === "ok");
    expect((await c.get("/api/agents/scout")).body.temperature).toBe(0.9);

    // Remove it: gone from the list, and a request for it is refused.
    rmSync(file);
    await waitFor(async () => (await c.get("/api/agents/scout")).status === 404);
    expect(JSON.stringify((await c.get("/v1/models")).body)).not.toContain("familiar/scout");
    expect((await c.get("/api/agents/helper")).status).toBe(200);
  });

  it("a name clash with config.yaml and a bad prompt file show on /healthz, naming the places", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-agents-"));
    const ws = join(dir, "workspace");
    mkdirSync(join(ws, "agents"), { recursive: true });
    mkdirSync(join(ws, "prompts"), { recursive: true });
    const file = join(ws, "agents", "helper.yaml");
    writeFileSync(file, "name: helper\ndescription: from a file\n");
    writeFileSync(join(ws, "prompts", "main.md"), "You are {{agent}}; mood: {{mood}}");
    const d = await startDaemonProcess({
      dir,
      config: daemonConfig({
        agents: { helper: { description: "from config.yaml" }, main: { prompt_file: "prompts/main.md" } },
      }),
    });
    try {
      const c = client(d);
      const h = await c.health();
      expect(h.services.agents?.state).toBe("degraded");
      expect(h.services.agents?.errors).toEqual([
        {
          path: file,
          key: "name",
          message: `name: agent "helper" is defined both in config.yaml (agents.helper) and in ${file}; config.yaml wins`,
        },
        {
          path: "config.yaml",
          key: "agents.main.prompt_file",
          message: expect.stringContaining(
            `agents.main.prompt_file: ${join(ws, "prompts", "main.md")}: unknown template variable(s) {{mood}}`,
          ),
        },
      ]);
      expect((await c.get("/api/agents/helper")).body).toMatchObject({
        source: "config",
        description: "from config.yaml",
      });
    } finally {
      await d.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
