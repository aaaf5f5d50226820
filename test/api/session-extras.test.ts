/**
 * Issue 34 item 9, the agents subsystem's seed items: `GET .../sessions/{sid}/memory` and
 * `.../files` over REST (a planted tool call naming a path outside the workspace is never listed),
 * per-agent `enabled` (a disabled agent is not run: the echo agent says so) and per-agent `memory`
 * (which memory the agent's memory tools reach).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { createToolsHarness } from "../tools/harness.js";

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: "extras-token-0123456789" },
    config: { agents: { off: { enabled: false } } },
  });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${h.base}${path}`, { method: "POST", headers: h.headers(), body: JSON.stringify(body) });
const get = async <T>(path: string): Promise<T> =>
  (await (await fetch(`${h.base}${path}`, { headers: h.headers() })).json()) as T;

async function newSession(body: Record<string, unknown> = {}): Promise<string> {
  return ((await (await post("/api/agents/main/sessions", body)).json()) as { id: string }).id;
}

describe("sessions/files", () => {
  it("lists the workspace files the session's tools wrote; a planted outside path is not listed", async () => {
    const sid = await newSession();
    h.fake.enqueue(
      {
        toolCalls: [{ name: "write_file", arguments: { path: "desk/out/report.md", content: "# Report\n" } }],
      },
      { text: "Written." },
    );
    expect((await post(`/api/agents/main/sessions/${sid}/messages`, { message: "write it" })).status).toBe(
      200,
    );
    const outside = mkdtempSync(join(tmpdir(), "familiar-outside-"));
    writeFileSync(join(outside, "secret.txt"), "not yours");
    const planted = JSON.stringify([
      { id: "p1", name: "write_file", arguments: JSON.stringify({ path: join(outside, "secret.txt") }) },
      { id: "p2", name: "edit_file", arguments: JSON.stringify({ path: "../../../../etc/hostname" }) },
      { id: "p3", name: "send_file", arguments: "not json" },
    ]);
    h.daemon.db
      .prepare(
        "INSERT INTO messages (session_id, role, content, tool_calls, created_at) VALUES (?, 'assistant', '', ?, ?)",
      )
      .run(sid, planted, Date.now());
    try {
      const r = await get<{
        session_id: string;
        files: { name: string; size_bytes: number; modified: string }[];
      }>(`/api/agents/main/sessions/${sid}/files`);
      expect(r.session_id).toBe(sid);
      expect(r.files).toEqual([{ name: "desk/out/report.md", size_bytes: 9, modified: expect.any(String) }]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe("sessions/memory", () => {
  it("is empty before a compaction and the summary after it", async () => {
    const sid = await newSession({ compact_keep_last_n: 0 });
    expect(await get(`/api/agents/main/sessions/${sid}/memory`)).toEqual({
      session_id: sid,
      content: "",
      source: null,
    });
    h.fake.enqueue({ text: "first" }, { text: "second" });
    await post(`/api/agents/main/sessions/${sid}/messages`, { message: "order ORD-1 is late" });
    await post(`/api/agents/main/sessions/${sid}/messages`, { message: "and ORD-2 too" });
    h.fake.enqueue({ text: "- ORD-1 and ORD-2 are late." });
    const c = await post(`/api/agents/main/sessions/${sid}/compact`, {});
    expect(c.status).toBe(200);
    const next = ((await c.json()) as { successor_session_id: string }).successor_session_id;
    const m = await get<{ content: string; source: string }>(`/api/agents/main/sessions/${next}/memory`);
    expect(m).toMatchObject({ content: "- ORD-1 and ORD-2 are late.", source: "compaction" });
  });
});

describe("per-agent enabled and memory", () => {
  it("a disabled agent is not run: the echo agent says it is disabled, no model call", async () => {
    const r = await post("/v1/chat/completions", {
      model: "familiar/off",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(r.status).toBe(200);
    const text = ((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
      .content;
    expect(text).toMatch(/disabled \(agents\.off\.enabled: false\)/);
    expect(h.fake.requests).toHaveLength(0);
  });

  it("memory: [files] keeps memory_search out of past chats and memory: [] refuses both tools", async () => {
    const t = await createToolsHarness({ agents: { notes: { memory: ["files"] }, none: { memory: [] } } });
    try {
      const sessions = await t.call(
        "memory_search",
        { query: "tea", sources: "sessions" },
        { ctx: { agentId: "notes" } },
      );
      expect(sessions.isError).toBe(true);
      expect(sessions.content).toMatch(
        /memory sessions is off for agent notes \(agents\.notes\.memory: \[files\]\)/,
      );
      const files = await t.call("memory_search", { query: "tea" }, { ctx: { agentId: "notes" } });
      expect(files.isError ?? false).toBe(false);
      const w = await t.call("memory_write", { text: "x" }, { ctx: { agentId: "none" } });
      expect(w.isError).toBe(true);
      expect(w.content).toMatch(/memory files are off for agent none/);
    } finally {
      await t.close();
    }
  });
});
