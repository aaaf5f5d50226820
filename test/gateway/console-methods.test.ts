/**
 * The console's doors on a real in-process daemon: the static files under /console/ (content types,
 * caching, gzip, no way out of the folder), and the websocket methods added for it: refused to a
 * client without the token, and doing what docs/gateway-protocol.md says for the owner.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
  readdirSync,
} from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";
import { GatewayClient, GatewayClientError } from "../../internal/gateway/client.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import { REPO_ROOT } from "../helpers/daemon.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "console-methods-token-77";
const NEW_METHODS = [
  "system.info",
  "usage.daily",
  "usage.sessions",
  "sessions.search",
  "sessions.model",
  "approvals.list",
  "approvals.resolve",
  "pairing.revoke",
  "cron.pause",
  "cron.resume",
  "heartbeat.runs",
  "memory.entries",
  "memory.edit",
  "memory.forget",
  "sessions.names",
];
let h: GatewayHarness;
let c: GatewayClient;

beforeAll(async () => {
  if (!existsSync(join(REPO_ROOT, "dist", "console", "index.html")))
    execFileSync(process.execPath, [join(REPO_ROOT, "cmd", "build-console.mjs")], { cwd: REPO_ROOT });
  const fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    // Many refused logins on purpose below: keep the failure limit out of the way of the later tests.
    gateway: { token: TOKEN, rate_limit: { max_failures: 1000, window_s: 60 } },
    config: {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/test-model",
        max_retries: 0,
        timeout_s: 10,
        pricing: { "fake/test-model": { input: 1, output: 2 } },
      },
      cron: { jobs: [{ id: "cfg-job", cron: "0 9 * * *", message: "check", deliver: "none" }] },
      heartbeat: { every: "30m", target: "none" },
    },
  });
  c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "console-test" });
}, 60_000);
afterAll(async () => {
  await c?.close();
  await h?.close();
  await h?.fake.close();
});

/** Opens a raw socket, sends connect with `token` then `method`; returns every frame and the close. */
function stranger(token: string | undefined, method: string): Promise<{ frames: string[]; code: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(h.wsUrl);
    const frames: string[] = [];
    ws.on("open", () => {
      ws.send(
        JSON.stringify({
          type: "req",
          id: 0,
          method: "connect",
          params: { ...(token ? { token } : {}), client: { name: "stranger" }, protocol: 1 },
        }),
      );
      ws.send(JSON.stringify({ type: "req", id: 1, method, params: { id: "x", decision: "approve" } }));
    });
    ws.on("message", (d) => frames.push(String(d)));
    ws.on("close", (code) => resolve({ frames, code }));
    ws.on("error", () => resolve({ frames, code: -1 }));
  });
}

describe("console static files", () => {
  it("serves index no-cache with a strict CSP, hashed assets immutable and gzipped, nothing else", async () => {
    const redirect = await fetch(`${h.base}/console`, { redirect: "manual" });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get("location")).toBe("/console/");

    const index = await fetch(`${h.base}/console/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(index.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await index.text();
    const js = /src="(assets\/console-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    const css = /href="(assets\/console-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(js && css).toBeTruthy();
    // No external request can be made by the page: every reference is relative.
    expect(html).not.toMatch(/https?:\/\//);

    const asset = await fetch(`${h.base}/console/${js}`, { headers: { "accept-encoding": "gzip" } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(asset.headers.get("content-encoding")).toBe("gzip");
    expect((await asset.text()).length).toBeGreaterThan(1000);
    const style = await fetch(`${h.base}/console/${css}`);
    expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8");

    for (const bad of [
      "/console/assets/../../package.json",
      "/console/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/console/assets/..%2Findex.html",
      "/console/../package.json",
      "/console/assets/",
      "/console/other.html",
    ]) {
      const r = await fetch(`${h.base}${bad}`);
      expect([404, 400], bad).toContain(r.status);
      expect(await r.text()).not.toContain('"name": "familiar"');
    }
    const post = await fetch(`${h.base}/console/`, { method: "POST" });
    expect(post.status).toBe(405);
    // Every built file is reachable, so the build and the route agree on names.
    const names = readdirSync(join(REPO_ROOT, "dist", "console", "assets")).filter((n) => !n.endsWith(".gz"));
    for (const n of names) expect((await fetch(`${h.base}/console/assets/${n}`)).status).toBe(200);
  });
});

describe("console websocket methods", () => {
  it("refuses every new method to a client without the token or with a wrong one", async () => {
    for (const method of NEW_METHODS)
      for (const token of [undefined, "wrong-token"]) {
        const r = await stranger(token, method);
        expect(r.code).toBe(1008);
        // Only the refused connect is answered; the method never runs.
        expect(r.frames).toHaveLength(1);
        expect(JSON.parse(r.frames[0]!)).toMatchObject({ id: 0, ok: false });
      }
  });

  it("reports daily usage split by agent, model and channel, and the costliest sessions with a trace", async () => {
    h.fake.enqueue({ text: "priced answer" });
    const sent = await c.request<{ result: { cost: number } }>("chat.send", {
      sessionKey: "usage-probe",
      message: "what does this cost?",
      wait: true,
    });
    expect(sent.result.cost).toBeGreaterThan(0);

    const d = await c.request<{
      days: string[];
      totals: { cost: number[]; calls: number[] };
      byAgent: { key: string }[];
      byModel: { key: string }[];
      byChannel: { key: string; cost: number[] }[];
      today: { cost: number; calls: number };
    }>("usage.daily", { days: 30 });
    expect(d.days).toHaveLength(30);
    expect(d.totals.cost.at(-1)).toBeCloseTo(sent.result.cost, 9);
    expect(d.today.cost).toBeCloseTo(sent.result.cost, 9);
    expect(d.byAgent.map((s) => s.key)).toEqual(["main"]);
    expect(d.byModel.map((s) => s.key)).toEqual(["fake/test-model"]);
    expect(d.byChannel.map((s) => s.key)).toEqual(["gateway"]);

    const top = await c.request<{ sessions: { sessionKey: string; cost: number; topRequestId: string }[] }>(
      "usage.sessions",
      { days: 30, limit: 5 },
    );
    expect(top.sessions[0]).toMatchObject({ sessionKey: "agent:main:gateway:usage-probe" });
    const trace = await fetch(`${h.base}/api/traces/${top.sessions[0]!.topRequestId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(trace.status).toBe(200);
    expect(((await trace.json()) as { totals: { model_calls: number } }).totals.model_calls).toBe(1);
    await expect(c.request("usage.daily", { days: 0 })).rejects.toMatchObject({ code: "invalid_params" });
  });

  it("searches sessions by words of the chat, pages, and sets a session's model", async () => {
    for (const [key, text] of [
      ["alpha", "tell me about alpacas"],
      ["beta", "bicycles please"],
    ] as const) {
      h.fake.enqueue({ text: "ok" });
      await c.request("chat.send", { sessionKey: key, message: text, wait: true });
    }
    const hit = await c.request<{ total: number; sessions: { sessionKey: string; title: string }[] }>(
      "sessions.search",
      { query: "alpaca" },
    );
    expect(hit.total).toBe(1);
    expect(hit.sessions[0]).toMatchObject({
      sessionKey: "agent:main:gateway:alpha",
      title: "tell me about alpacas",
    });
    const page1 = await c.request<{ total: number; sessions: unknown[] }>("sessions.search", { limit: 1 });
    const page2 = await c.request<{ total: number; sessions: { sessionKey: string }[] }>("sessions.search", {
      limit: 1,
      offset: 1,
    });
    expect(page1.total).toBeGreaterThanOrEqual(3);
    expect(page1.sessions).toHaveLength(1);
    expect(page2.sessions[0]?.sessionKey).not.toBe((page1.sessions[0] as { sessionKey: string }).sessionKey);
    // `%` is a literal, not a wildcard.
    expect((await c.request<{ total: number }>("sessions.search", { query: "%" })).total).toBe(0);

    const set = await c.request<{ modelOverride: string }>("sessions.model", {
      sessionKey: "agent:main:gateway:alpha",
      model: "fake/other-model",
    });
    expect(set.modelOverride).toBe("fake/other-model");
    const listed = await c.request<{ sessions: { sessionKey: string; modelOverride: string | null }[] }>(
      "sessions.search",
      { query: "alpaca" },
    );
    expect(listed.sessions[0]?.modelOverride).toBe("fake/other-model");
    await expect(
      c.request("sessions.model", { sessionKey: "agent:main:gateway:alpha", model: "nope/x" }),
    ).rejects.toMatchObject({ code: "invalid_params", message: expect.stringContaining('"nope"') });
    await expect(
      c.request("sessions.model", { sessionKey: "agent:main:gateway:none", model: null }),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("sessions.names titles sessions by id or key for the owner, and refuses a chat-role client", async () => {
    h.fake.enqueue({ text: "ok" });
    await c.request("chat.send", {
      sessionKey: "named",
      message: "Which  bus goes\nto the lake?",
      wait: true,
    });
    const found = await c.request<{ sessions: { sessionId: string }[] }>("sessions.search", {
      query: "bus goes",
    });
    const id = found.sessions[0]!.sessionId;
    const owner = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "o", role: "owner" });
    try {
      const r = await owner.request<{
        sessions: { id: string; key: string; agentId: string; title: string }[];
      }>("sessions.names", {
        ids: [id, "no-such-id"],
        keys: ["agent:main:gateway:named", "agent:main:gateway:none"],
      });
      // Both asks name the same session once; unknown ones are left out.
      expect(r.sessions).toEqual([
        { id, key: "agent:main:gateway:named", agentId: "main", title: "Which bus goes to the lake?" },
      ]);
      await expect(owner.request("sessions.names", { ids: "x" })).rejects.toMatchObject({
        code: "invalid_params",
        message: expect.stringContaining("params.ids"),
      });
    } finally {
      await owner.close();
    }
    // A chat integration holds the token but not the owner's role: it reads no titles across sessions.
    await expect(c.request("sessions.names", { ids: [id] })).rejects.toMatchObject({ code: "forbidden" });
  });

  it("pauses and resumes a runtime cron job; a config job is refused with the reason", async () => {
    await c.request("cron.add", { job: { id: "rt-job", every: "1h", message: "ping", deliver: "none" } });
    const paused = await c.request<{ job: { enabled: boolean; nextRunAt: number | null } }>("cron.pause", {
      id: "rt-job",
    });
    expect(paused.job).toMatchObject({ enabled: false, nextRunAt: null });
    const resumed = await c.request<{ job: { enabled: boolean; nextRunAt: number | null } }>("cron.resume", {
      id: "rt-job",
    });
    expect(resumed.job.enabled).toBe(true);
    expect(resumed.job.nextRunAt).toBeGreaterThan(Date.now());
    const err = await c.request("cron.pause", { id: "cfg-job" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayClientError);
    expect(err).toMatchObject({ code: "forbidden", message: expect.stringContaining("config.yaml") });
    await expect(c.request("cron.resume", { id: "nope" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("answers approvals, pairing, heartbeat and system facts", async () => {
    expect(await c.request("approvals.list")).toEqual({ approvals: [] });
    await expect(c.request("approvals.resolve", { id: "abc", decision: "approve" })).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(c.request("approvals.resolve", { id: "abc", decision: "maybe" })).rejects.toMatchObject({
      code: "invalid_params",
    });
    await expect(c.request("pairing.revoke", { channel: "telegram", userId: "1" })).rejects.toMatchObject({
      code: "not_found",
    });
    expect(await c.request<{ runs: unknown[] }>("heartbeat.runs", { limit: 5 })).toEqual({ runs: [] });
    const info = await c.request<Record<string, unknown>>("system.info");
    expect(info).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      pendingRestart: [],
      configError: null,
    });
    expect((info.memory as { rss: number }).rss).toBeGreaterThan(0);
    expect(info.notes).toEqual({ files: expect.any(Number), bytes: expect.any(Number) });
  });

  it("memory.entries lists facts and notes with where each came from, and never follows a planted link", async () => {
    const ws = join(h.dir, "workspace");
    // A fact written by a turn (memory_write), so it has an origin.
    h.fake.enqueue(
      {
        toolCalls: [
          { name: "memory_write", arguments: { text: "The owner's cat is called Miso", kind: "fact" } },
        ],
      },
      { text: "Noted." },
    );
    await c.request("chat.send", {
      sessionKey: "memory-test",
      message: "remember my cat",
      wait: true,
    });
    mkdirSync(join(ws, "memory"), { recursive: true });
    writeFileSync(
      join(ws, "memory", "2026-11-20.md"),
      "# 2026-11-20\n\n- 09:15 Called the plumber\n  about the leak\n",
    );
    // Planted by a sandboxed command: a note file that is a link to a file outside the workspace.
    const outside = join(h.dir, "outside-secret.txt");
    writeFileSync(outside, "- 10:00 SECRET-OUTSIDE-THE-WORKSPACE\n");
    symlinkSync(outside, join(ws, "memory", "2026-11-21.md"));
    const r = await c.request<{
      entries: {
        kind: string;
        file: string;
        line: number;
        date: string | null;
        text: string;
        origin: { request_id: string | null } | null;
      }[];
      refused: string[];
    }>("memory.entries", {});
    const fact = r.entries.find((e) => e.text === "The owner's cat is called Miso");
    expect(fact).toMatchObject({ kind: "fact", file: "MEMORY.md" });
    expect(fact!.origin?.request_id).toMatch(/.+/);
    const note = r.entries.find((e) => e.file === "memory/2026-11-20.md");
    expect(note).toMatchObject({
      kind: "note",
      line: 3,
      date: "2026-11-20 09:15",
      text: "Called the plumber\nabout the leak",
    });
    expect(JSON.stringify(r.entries)).not.toContain("SECRET-OUTSIDE");
    expect(r.refused.join("\n")).toContain("memory/2026-11-21.md");
  });

  it("memory.edit and memory.forget change one entry through the door; a stale or planted file is refused", async () => {
    const ws = join(h.dir, "workspace");
    writeFileSync(
      join(ws, "MEMORY.md"),
      "# Memory\n\n- Likes jazz (2026-11-01)\n- Lives in Lyon\n  near the river (2026-11-02)\n- Has a bike (2026-11-03)\n",
    );
    const list = async () =>
      (await c.request<{ entries: { file: string; line: number; text: string }[] }>("memory.entries", {}))
        .entries;
    const lyon = (await list()).find((e) => e.text.startsWith("Lives in Lyon"))!;
    expect(lyon).toMatchObject({ file: "MEMORY.md", line: 4, text: "Lives in Lyon\nnear the river" });
    await c.request("memory.edit", {
      file: "MEMORY.md",
      line: 4,
      text: lyon.text,
      replacement: "Lives in Grenoble",
    });
    expect(readFileSync(join(ws, "MEMORY.md"), "utf8")).toBe(
      "# Memory\n\n- Likes jazz (2026-11-01)\n- Lives in Grenoble (2026-11-02)\n- Has a bike (2026-11-03)\n",
    );
    // What the owner saw is gone (stale): refused, nothing written.
    await expect(
      c.request("memory.forget", { file: "MEMORY.md", line: 4, text: lyon.text }),
    ).rejects.toMatchObject({ code: "conflict" });
    await c.request("memory.forget", { file: "MEMORY.md", line: 3, text: "Likes jazz" });
    expect(readFileSync(join(ws, "MEMORY.md"), "utf8")).toBe(
      "# Memory\n\n- Lives in Grenoble (2026-11-02)\n- Has a bike (2026-11-03)\n",
    );
    // Only memory files: anything else is refused by name.
    await expect(c.request("memory.forget", { file: "AGENTS.md", line: 1, text: "x" })).rejects.toMatchObject(
      { code: "invalid_params" },
    );
    await expect(
      c.request("memory.forget", { file: "memory/../MEMORY.md", line: 3, text: "x" }),
    ).rejects.toMatchObject({ code: "invalid_params" });
    // A note file planted as a link to a file outside: refused, the outside file untouched.
    const outside = join(h.dir, "outside-notes.txt");
    writeFileSync(outside, "# x\n\n- 10:00 keep me\n");
    symlinkSync(outside, join(ws, "memory", "2026-11-22.md"));
    await expect(
      c.request("memory.forget", { file: "memory/2026-11-22.md", line: 3, text: "keep me" }),
    ).rejects.toMatchObject({ code: "forbidden" });
    expect(readFileSync(outside, "utf8")).toBe("# x\n\n- 10:00 keep me\n");
    // A hard link to an outside file: refused as well.
    const outside2 = join(h.dir, "outside-hard.txt");
    writeFileSync(outside2, "# y\n\n- 11:00 keep me too\n");
    linkSync(outside2, join(ws, "memory", "2026-11-23.md"));
    await expect(
      c.request("memory.forget", { file: "memory/2026-11-23.md", line: 3, text: "keep me too" }),
    ).rejects.toMatchObject({ code: "forbidden" });
    expect(readFileSync(outside2, "utf8")).toBe("# y\n\n- 11:00 keep me too\n");
    // A note keeps its time when edited.
    await c.request("memory.edit", {
      file: "memory/2026-11-20.md",
      line: 3,
      text: "Called the plumber\nabout the leak",
      replacement: "Called the plumber; fixed",
    });
    expect(readFileSync(join(ws, "memory", "2026-11-20.md"), "utf8")).toBe(
      "# 2026-11-20\n\n- 09:15 Called the plumber; fixed\n",
    );
  });
});
