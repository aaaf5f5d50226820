/**
 * `/api` agents, templates and one-shot chat, over real HTTP against the in-process daemon whose model
 * is the fake OpenAI server.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, type ApiClient } from "./api-client.js";

const TOKEN = "api-agents-token";
let h: GatewayHarness;
let api: ApiClient;

type AgentsList = {
  default: string;
  agents: { id: string; source: string; path?: string; editable: boolean }[];
};

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { helper: { description: "config agent" } } },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const count = (sql: string, ...args: string[]): number =>
  (h.daemon.db.prepare(sql).get(...args) as { n: number }).n;

describe("/api agents", () => {
  it("requires the gateway token", async () => {
    const res = await apiClient(h.base, undefined).req("GET", "/api/agents");
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: "unauthorized" } });
    const wrong = await apiClient(h.base, "nope").req("GET", "/api/agents");
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: { code: "invalid_token" } });
  });

  it("lists config, built-in, workspace-file and API agents with their source", async () => {
    const dir = join(h.dir, "workspace", "agents");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "filer.yaml"), "name: filer\ndescription: from a file\n");
    const created = await api.req("POST", "/api/agents", { name: "viaapi", description: "made over HTTP" });
    expect(created.status).toBe(201);
    const list = await waitFor(async () => {
      const r = await api.req<AgentsList>("GET", "/api/agents");
      return r.body.agents.some((a) => a.id === "filer") ? r.body : undefined;
    });
    const by = new Map(list.agents.map((a) => [a.id, a]));
    expect(by.get("helper")).toMatchObject({ source: "config", editable: false });
    expect(by.get(list.default)?.source).toMatch(/^(config|builtin)$/);
    expect(by.get("filer")).toMatchObject({ source: "file", path: join(dir, "filer.yaml"), editable: false });
    expect(by.get("viaapi")).toMatchObject({ source: "api", editable: true, description: "made over HTTP" });
    const one = await api.req("GET", "/api/agents/filer");
    expect(one.body).toMatchObject({ id: "filer", description: "from a file" });
  });

  it("pages the agent list with limit and after; bad values answer 400 naming the parameter", async () => {
    for (const n of [1, 2, 3, 4, 5]) await api.req("POST", "/api/agents", { name: `pg-${n}` });
    type Page = AgentsList & { next_after: string | null };
    const all = await api.req<Page>("GET", "/api/agents?limit=500");
    expect(all.body.next_after).toBeNull();
    const seen: string[] = [];
    let after: string | null = "";
    let pages = 0;
    while (after !== null) {
      const p: { status: number; body: Page } = await api.req(
        "GET",
        `/api/agents?limit=2${after ? `&after=${encodeURIComponent(after)}` : ""}`,
      );
      expect(p.status).toBe(200);
      expect(p.body.agents.length).toBeLessThanOrEqual(2);
      expect(p.body.default).toBe(all.body.default);
      seen.push(...p.body.agents.map((a) => a.id));
      after = p.body.next_after;
      pages++;
    }
    // Every agent exactly once, in the unpaged order; API agents oldest first.
    expect(seen).toEqual(all.body.agents.map((a) => a.id));
    expect(pages).toBe(Math.ceil(seen.length / 2));
    expect(seen.filter((id) => id.startsWith("pg-"))).toEqual(["pg-1", "pg-2", "pg-3", "pg-4", "pg-5"]);
    // A page that ends exactly at the last agent says so.
    const last = await api.req<Page>("GET", `/api/agents?after=${seen[seen.length - 2]}&limit=1`);
    expect(last.body.agents.map((a) => a.id)).toEqual([seen[seen.length - 1]]);
    expect(last.body.next_after).toBeNull();
    for (const bad of ["0", "501", "-1", "abc", "1.5"]) {
      const r = await api.req("GET", `/api/agents?limit=${bad}`);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: "invalid_query", field: "limit" } });
    }
    const gone = await api.req("GET", "/api/agents?after=no-such-agent");
    expect(gone.status).toBe(400);
    expect(gone.body).toMatchObject({ error: { code: "invalid_query", field: "after" } });
  });

  it("creates, rejects duplicates with 409, validates bodies with the failing field", async () => {
    const ok = await api.req("POST", "/api/agents", {
      name: "dup1",
      temperature: 0.5,
      system_prompt: "Be brief.",
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      id: "dup1",
      source: "api",
      temperature: 0.5,
      system_prompt: "Be brief.",
    });

    const again = await api.req("POST", "/api/agents", { name: "dup1" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: "agent_exists" } });
    const clash = await api.req("POST", "/api/agents", { name: "helper" });
    expect(clash.status).toBe(409);
    expect((clash.body.error as { message: string }).message).toContain("config");

    const hot = await api.req("POST", "/api/agents", { name: "hot", temperature: 5 });
    expect(hot.status).toBe(400);
    expect(hot.body).toMatchObject({ error: { code: "invalid_body", field: "temperature" } });
    const badName = await api.req("POST", "/api/agents", { name: "has space" });
    expect(badName.body).toMatchObject({ error: { code: "invalid_body", field: "name" } });
    const unknownKey = await api.req("POST", "/api/agents", { name: "x1", colour: "red" });
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.body).toMatchObject({ error: { code: "invalid_body", field: "colour" } });
    for (const prompt_file of [
      "/etc/passwd",
      "../outside.md",
      "prompts/../../x.md",
      "desk/p.md",
      "./desk/x/p.md",
    ]) {
      const escape = await api.req("POST", "/api/agents", { name: "escaper", prompt_file });
      expect(escape.body).toMatchObject({ error: { code: "invalid_body", field: "prompt_file" } });
    }
    // The program of a CLI engine would run anything on the host without the owner's approval.
    for (const [field, extra] of [
      ["command", { engine: "cli", command: "/bin/sh" }],
      ["args", { engine: "cli", args: ["-c", "id"] }],
      ["extra_args", { engine: "claude-cli", extra_args: ["--dangerously-skip-permissions"] }],
      ["mcp_config", { engine: "claude-cli", mcp_config: "mcp.json" }],
    ] as const) {
      const r = await api.req("POST", "/api/agents", { name: "runner", ...extra });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: "invalid_body", field } });
    }
    const coder = await api.req("POST", "/api/agents", { name: "coder", engine: "claude-cli" });
    expect(coder.status).toBe(201);
    const patched = await api.req("PATCH", "/api/agents/coder", { command: "/bin/sh" });
    expect(patched.body).toMatchObject({ error: { code: "invalid_body", field: "command" } });
    expect((await api.req("GET", "/api/agents/coder")).body).not.toHaveProperty("command");
    expect((await api.req("DELETE", "/api/agents/coder")).status).toBe(200);
    const notJson = await fetch(`${h.base}/api/agents`, {
      method: "POST",
      headers: api.headers(),
      body: "{nope",
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: "invalid_json" } });
  });

  it("PATCH edits API agents only; null resets a field", async () => {
    await api.req("POST", "/api/agents", { name: "editme", description: "v1", temperature: 0.1 });
    const p = await api.req("PATCH", "/api/agents/editme", { description: "v2", temperature: null });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ id: "editme", description: "v2" });
    expect(p.body.temperature).toBeUndefined();
    expect((await api.req("GET", "/api/agents/editme")).body).toMatchObject({ description: "v2" });

    const bad = await api.req("PATCH", "/api/agents/editme", { max_tokens: -1 });
    expect(bad.body).toMatchObject({ error: { code: "invalid_body", field: "max_tokens" } });
    const ro = await api.req("PATCH", "/api/agents/helper", { description: "hijack" });
    expect(ro.status).toBe(403);
    expect(ro.body).toMatchObject({ error: { code: "agent_read_only" } });
    const missing = await api.req("PATCH", "/api/agents/ghost", { description: "x" });
    expect(missing.status).toBe(404);
  });

  it("DELETE removes an API agent with its sessions and messages; config agents are refused", async () => {
    await api.req("POST", "/api/agents", { name: "doomed" });
    const s = await api.req<{ id: string }>("POST", "/api/agents/doomed/sessions", {});
    expect(s.status).toBe(201);
    h.fake.enqueue({ text: "stored reply" });
    const turn = await api.req("POST", `/api/agents/doomed/sessions/${s.body.id}/messages`, {
      message: "hello",
    });
    expect(turn.status).toBe(200);
    expect(count("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", s.body.id)).toBe(2);

    const del = await api.req("DELETE", "/api/agents/doomed");
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ deleted: "doomed", sessions_deleted: 1 });
    expect(count("SELECT COUNT(*) AS n FROM sessions WHERE agent_id = ?", "doomed")).toBe(0);
    expect(count("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", s.body.id)).toBe(0);
    expect((await api.req("GET", "/api/agents/doomed")).status).toBe(404);
    expect((await api.req("GET", `/api/agents/doomed/sessions/${s.body.id}`)).status).toBe(404);

    const cfg = await api.req("DELETE", "/api/agents/helper");
    expect(cfg.status).toBe(403);
    expect((await api.req("DELETE", "/api/agents/ghost")).body).toMatchObject({
      error: { code: "agent_not_found" },
    });
  });
});

describe("/api agent templates", () => {
  it("lists the shipped catalog and instantiates a template as an API agent", async () => {
    const t = await api.req<{ templates: { id: string; system_prompt: string }[] }>(
      "GET",
      "/api/agent-templates",
    );
    expect(t.status).toBe(200);
    const ids = t.body.templates.map((x) => x.id);
    expect(ids).toEqual(
      expect.arrayContaining(["data-analyst", "research-synthesiser", "technical-writer", "grounded-qa"]),
    );

    const made = await api.req("POST", "/api/agents/from-template", { templateId: "grounded-qa" });
    expect(made.status).toBe(201);
    const tpl = t.body.templates.find((x) => x.id === "grounded-qa");
    expect(made.body).toMatchObject({
      id: "grounded-qa",
      source: "api",
      system_prompt: tpl?.system_prompt,
      template: { id: "grounded-qa" },
    });
    const named = await api.req("POST", "/api/agents/from-template", {
      templateId: "data-analyst",
      name: "bobby",
    });
    expect(named.body).toMatchObject({ id: "bobby", source: "api" });

    expect((await api.req("POST", "/api/agents/from-template", { templateId: "grounded-qa" })).status).toBe(
      409,
    );
    const unknown = await api.req("POST", "/api/agents/from-template", { templateId: "nope" });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "template_not_found", field: "templateId" } });
    // The seed catalog's templateIds (bobby, maven, quill, sage) are aliases of ours.
    const seedId = await api.req("POST", "/api/agents/from-template", { templateId: "sage", name: "sage2" });
    expect(seedId.status).toBe(201);
    expect(seedId.body).toMatchObject({
      id: "sage2",
      system_prompt: tpl?.system_prompt,
      template: { id: "grounded-qa" },
    });
    expect(t.body.templates.find((x) => x.id === "data-analyst")).toMatchObject({ aliases: ["bobby"] });
    const missing = await api.req("POST", "/api/agents/from-template", {});
    expect(missing.body).toMatchObject({ error: { code: "invalid_body", field: "templateId" } });

    // The new agent answers with the template's prompt.
    h.fake.enqueue({ text: "I don't have evidence for that." });
    const chat = await api.req("POST", "/api/agents/grounded-qa/chat", { message: "Is it raining on Mars?" });
    expect(chat.body).toMatchObject({ reply: "I don't have evidence for that." });
    const sys = h.fake.requests[0]?.body?.messages?.[0];
    expect(JSON.stringify(sys)).toContain("I don't have evidence for that");
  });
});

describe("/api one-shot chat", () => {
  it("answers without storing a session, with tree usage in body and headers", async () => {
    const before = count("SELECT COUNT(*) AS n FROM sessions");
    h.fake.enqueue({ text: "Four.", usage: { prompt_tokens: 20, completion_tokens: 2, total_tokens: 22 } });
    const r = await api.req("POST", "/api/agents/helper/chat", {
      message: "And plus two?",
      history: [
        { role: "user", content: "What is 1+1?" },
        { role: "assistant", content: "Two." },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      agent_id: "helper",
      reply: "Four.",
      finish_reason: "stop",
      usage: { input: 20, output: 2, total: 22 },
      sub_calls: 1,
    });
    expect(r.headers.get("x-familiar-usage-input")).toBe("20");
    expect(r.headers.get("x-familiar-usage-output")).toBe("2");
    expect(r.headers.get("x-familiar-usage-subcalls")).toBe("1");
    expect(r.headers.get("x-familiar-request-id")).toBe(r.body.request_id);
    const sent = (h.fake.requests[0]?.body?.messages ?? []).map((m) => [m.role, m.content]);
    expect(sent).toContainEqual(["assistant", "Two."]);
    expect(count("SELECT COUNT(*) AS n FROM sessions")).toBe(before);
    expect(count("SELECT COUNT(*) AS n FROM messages WHERE content = ?", "And plus two?")).toBe(0);

    const empty = await api.req("POST", "/api/agents/helper/chat", { message: "" });
    expect(empty.body).toMatchObject({ error: { code: "invalid_body", field: "message" } });
    expect((await api.req("POST", "/api/agents/ghost/chat", { message: "hi" })).status).toBe(404);
  });

  it("answers 404 for unknown routes and 405 for a wrong method", async () => {
    expect((await api.req("GET", "/api/nothing")).body).toMatchObject({ error: { code: "not_found" } });
    const wrong = await api.req("PUT", "/api/agents");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toContain("GET");
  });
});
