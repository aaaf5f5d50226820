/**
 * `/api` sessions over real HTTP: create with compaction settings, list, read, paginate, delete with
 * cascade, synchronous turns, the agent-mismatch 400, read-only channel sessions, compaction with the
 * 308 to the successor (followed by Node's fetch) and the lineage.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, type ApiClient } from "./api-client.js";

const TOKEN = "api-sessions-token";
let h: GatewayHarness;
let api: ApiClient;

type Session = {
  id: string;
  agent_id: string;
  message_count: number;
  archived: boolean;
  successor_id: string | null;
};
type Msg = { id: number; role: string; content: string; session_id: string; request_id: string };

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { default: "main", main: {}, helper: { description: "second" } } },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const newSession = async (agent = "main", body: Record<string, unknown> = {}): Promise<Session> => {
  const r = await api.req<Session>("POST", `/api/agents/${agent}/sessions`, body);
  expect(r.status).toBe(201);
  return r.body;
};

describe("/api sessions", () => {
  it("creates with compaction settings, reads with message count, lists per agent", async () => {
    const s = await newSession("main", {
      compact_strategy: "manual",
      compact_keep_last_n: 4,
      compact_observation_mask: false,
    });
    expect(s).toMatchObject({
      agent_id: "main",
      channel: "gateway",
      writable: true,
      archived: false,
      message_count: 0,
      compaction: { strategy: "manual", keep_last_n: 4, observation_mask: false },
    });
    h.fake.enqueue({ text: "Hi there." });
    const turn = await api.req<{ user: Msg; assistant: Msg; finish_reason: string }>(
      "POST",
      `/api/agents/main/sessions/${s.id}/messages`,
      { message: "Hello" },
    );
    expect(turn.status).toBe(200);
    expect(turn.body.user).toMatchObject({ role: "user", content: "Hello", session_id: s.id });
    expect(turn.body.assistant).toMatchObject({
      role: "assistant",
      content: "Hi there.",
      finish_reason: "stop",
    });
    expect(turn.body.finish_reason).toBe("stop");
    expect(turn.headers.get("x-familiar-usage-subcalls")).toBe("1");

    const got = await api.req<Session>("GET", `/api/agents/main/sessions/${s.id}`);
    expect(got.body.message_count).toBe(2);
    const list = await api.req<{ sessions: Session[] }>("GET", "/api/agents/main/sessions");
    expect(list.body.sessions.find((x) => x.id === s.id)?.message_count).toBe(2);
    expect(list.body.sessions.every((x) => x.agent_id === "main")).toBe(true);

    const bad = await api.req("POST", "/api/agents/main/sessions", { compact_keep_last_n: 500 });
    expect(bad.body).toMatchObject({ error: { code: "invalid_body", field: "compact_keep_last_n" } });
    const badStrategy = await api.req("POST", "/api/agents/main/sessions", { compact_strategy: "sometimes" });
    expect(badStrategy.body).toMatchObject({ error: { field: "compact_strategy" } });
  });

  it("pages messages oldest first", async () => {
    const s = await newSession();
    for (const word of ["one", "two", "three"]) {
      h.fake.enqueue({ text: `re ${word}` });
      await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: word });
    }
    const seen: string[] = [];
    let after: number | null = 0;
    let pages = 0;
    while (after !== null) {
      const p: { body: { messages: Msg[]; next_after: number | null } } = await api.req(
        "GET",
        `/api/agents/main/sessions/${s.id}/messages?limit=4&after=${after}`,
      );
      seen.push(...p.body.messages.map((m) => m.content));
      after = p.body.next_after;
      pages++;
    }
    expect(pages).toBe(2);
    expect(seen).toEqual(["one", "re one", "two", "re two", "three", "re three"]);
    const bad = await api.req("GET", `/api/agents/main/sessions/${s.id}/messages?limit=abc`);
    expect(bad.body).toMatchObject({ error: { code: "invalid_query", field: "limit" } });
  });

  it("pages session lists newest first with limit and after; bad values answer 400", async () => {
    expect((await api.req("POST", "/api/agents", { name: "pager" })).status).toBe(201);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await newSession("pager")).id);
    type Page = { status: number; body: { sessions: Session[]; next_after: string | null } };
    const walk = async (path: string): Promise<{ ids: string[]; pages: number }> => {
      const ids: string[] = [];
      let after: string | null = "";
      let pages = 0;
      while (after !== null) {
        const sep = path.includes("?") ? "&" : "?";
        const p: Page = await api.req(
          "GET",
          `${path}${sep}limit=2${after ? `&after=${encodeURIComponent(after)}` : ""}`,
        );
        expect(p.status).toBe(200);
        ids.push(...p.body.sessions.map((x) => x.id));
        after = p.body.next_after;
        pages++;
      }
      return { ids, pages };
    };
    const all: Page = await api.req("GET", "/api/agents/pager/sessions");
    expect(all.body.next_after).toBeNull();
    expect(new Set(all.body.sessions.map((x) => x.id))).toEqual(new Set(made));
    const paged = await walk("/api/agents/pager/sessions");
    expect(paged.ids).toEqual(all.body.sessions.map((x) => x.id));
    expect(paged.pages).toBe(3);

    // A session updated between pages moves to the front, after the pages already read: the rest
    // of the walk neither repeats nor skips the others.
    const first: Page = await api.req("GET", "/api/agents/pager/sessions?limit=2");
    const bumped = paged.ids[4] ?? "";
    h.fake.enqueue({ text: "ok" });
    await api.req("POST", `/api/agents/pager/sessions/${bumped}/messages`, { message: "bump" });
    const rest: Page = await api.req(
      "GET",
      `/api/agents/pager/sessions?limit=10&after=${encodeURIComponent(first.body.next_after ?? "")}`,
    );
    expect(rest.body.sessions.map((x) => x.id)).toEqual(paged.ids.slice(2, 4));
    const fresh: Page = await api.req("GET", "/api/agents/pager/sessions?limit=1");
    expect(fresh.body.sessions[0]?.id).toBe(bumped);

    // The all-agents list of live sessions pages the same way.
    const live: Page = await api.req("GET", "/api/sessions?limit=1000");
    const livePaged = await walk("/api/sessions");
    expect(livePaged.ids).toEqual(live.body.sessions.map((x) => x.id));

    for (const path of ["/api/agents/pager/sessions", "/api/sessions"]) {
      for (const bad of ["0", "1001", "x"]) {
        const r = await api.req("GET", `${path}?limit=${bad}`);
        expect(r.body).toMatchObject({ error: { code: "invalid_query", field: "limit" } });
      }
      const r = await api.req("GET", `${path}?after=garbage`);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: "invalid_query", field: "after" } });
    }
    const msgs = `/api/agents/pager/sessions/${bumped}/messages`;
    for (const [q, field] of [
      ["limit=0", "limit"],
      ["limit=501", "limit"],
      ["after=-3", "after"],
    ] as const) {
      const r = await api.req("GET", `${msgs}?${q}`);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: "invalid_query", field } });
    }
  });

  it("DELETE removes the session and its messages", async () => {
    const s = await newSession();
    h.fake.enqueue({ text: "ok" });
    await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "keep me?" });
    const del = await api.req("DELETE", `/api/agents/main/sessions/${s.id}`);
    expect(del.body).toMatchObject({ deleted: s.id, messages_deleted: 2 });
    const n = h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?").get(s.id) as {
      n: number;
    };
    expect(n.n).toBe(0);
    const gone = await api.req("GET", `/api/agents/main/sessions/${s.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error: { code: "session_not_found" } });
  });

  it("answers 400 session_agent_mismatch through another agent's path", async () => {
    const s = await newSession("main");
    const before = h.fake.requests.length;
    const r = await api.req("POST", `/api/agents/helper/sessions/${s.id}/messages`, { message: "sneaky" });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: { code: "session_agent_mismatch" } });
    const g = await api.req("GET", `/api/agents/helper/sessions/${s.id}`);
    expect(g.status).toBe(400);
    expect(h.fake.requests.length).toBe(before);
    const stored = h.daemon.db
      .prepare("SELECT COUNT(*) AS n FROM messages WHERE content = 'sneaky'")
      .get() as {
      n: number;
    };
    expect(stored.n).toBe(0);
  });

  it("answers 409 session_not_live for a session that /new replaced", async () => {
    const s = await newSession();
    const host = h.daemon.parts.host as import("../../internal/agent/host.js").AgentHostImpl;
    const key = host.sessions.get(s.id)?.key ?? "";
    const { sessionId: live } = host.reset(key);
    const r = await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "late" });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: { code: "session_not_live" } });
    expect((r.body.error as { message: string }).message).toContain(live);
    // The replaced session stays readable.
    expect((await api.req("GET", `/api/agents/main/sessions/${s.id}`)).status).toBe(200);
  });

  it("reaches channel sessions read-only unless gateway.allow_channel_writes", async () => {
    const host = h.daemon.parts.host as import("../../internal/agent/host.js").AgentHostImpl;
    const tg = host.sessions.create("agent:main:telegram:dm:4242", "main", { origin: "telegram:4242" });
    host.sessions.append(tg.id, { role: "user", content: "from telegram" });
    const list = await api.req<{ sessions: (Session & { channel: string; writable: boolean })[] }>(
      "GET",
      "/api/agents/main/sessions",
    );
    expect(list.body.sessions.find((x) => x.id === tg.id)).toMatchObject({
      channel: "telegram",
      writable: false,
    });
    const msgs = await api.req<{ messages: Msg[] }>("GET", `/api/agents/main/sessions/${tg.id}/messages`);
    expect(msgs.body.messages.map((m) => m.content)).toEqual(["from telegram"]);
    const post = await api.req("POST", `/api/agents/main/sessions/${tg.id}/messages`, { message: "intrude" });
    expect(post.status).toBe(403);
    expect(post.body).toMatchObject({ error: { code: "session_read_only" } });
    expect((await api.req("DELETE", `/api/agents/main/sessions/${tg.id}`)).status).toBe(403);
    const patch = await api.req("PATCH", `/api/agents/main/sessions/${tg.id}`, { title: "mine now" });
    expect(patch.body).toMatchObject({ error: { code: "session_read_only" } });
  });

  it("a title on create, PATCH of title and model (the session's /model); null clears", async () => {
    const s = await newSession("main", { title: "  Trip planning " });
    expect(s).toMatchObject({ title: "Trip planning" });
    const renamed = await api.req<Session & { title: string | null; model_override: string | null }>(
      "PATCH",
      `/api/agents/main/sessions/${s.id}`,
      { title: "Trip to Lisbon", model_override: "fake/big-model" },
    );
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ title: "Trip to Lisbon", model_override: "fake/big-model" });
    h.fake.enqueue({ text: "From the big model." });
    await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "Flights?" });
    expect(h.fake.requests.at(-1)?.model).toBe("big-model");
    const list = await api.req<{ sessions: (Session & { title: string | null })[] }>(
      "GET",
      "/api/agents/main/sessions",
    );
    expect(list.body.sessions.find((x) => x.id === s.id)?.title).toBe("Trip to Lisbon");
    const cleared = await api.req("PATCH", `/api/agents/main/sessions/${s.id}`, {
      title: null,
      model_override: null,
    });
    expect(cleared.body).toMatchObject({ title: null, model_override: null });
    h.fake.enqueue({ text: "Back to the default." });
    await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "And hotels?" });
    expect(h.fake.requests.at(-1)?.model).toBe("test-model");
    const bad = await api.req("PATCH", `/api/agents/main/sessions/${s.id}`, { model_override: "no-slash" });
    expect(bad.body).toMatchObject({ error: { code: "invalid_body", field: "model_override" } });
    const empty = await api.req("PATCH", `/api/agents/main/sessions/${s.id}`, { title: " " });
    expect(empty.body).toMatchObject({ error: { code: "invalid_body", field: "title" } });
    const other = await api.req("PATCH", `/api/agents/helper/sessions/${s.id}`, { title: "x" });
    expect(other.body).toMatchObject({ error: { code: "session_agent_mismatch" } });
  });

  it("PATCH changes a session's compaction settings; null falls back to the agent's", async () => {
    type WithCompaction = Session & { compaction: { strategy: string; keep_last_n: number } };
    const s = (await api.req<WithCompaction>("POST", "/api/agents/main/sessions", {})).body;
    const dflt = s.compaction;
    const off = await api.req<WithCompaction>("PATCH", `/api/agents/main/sessions/${s.id}`, {
      compact_strategy: "off",
      compact_keep_last_n: 3,
    });
    expect(off.body.compaction).toMatchObject({ strategy: "off", keep_last_n: 3 });
    const back = await api.req<WithCompaction>("PATCH", `/api/agents/main/sessions/${s.id}`, {
      compact_keep_last_n: null,
    });
    expect(back.body.compaction).toMatchObject({ strategy: "off", keep_last_n: dflt.keep_last_n });
    h.fake.enqueue({ text: "ok" });
    await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "hi" });
    const refused = await api.req("POST", `/api/agents/main/sessions/${s.id}/compact`, {});
    expect(refused.body).toMatchObject({ error: { code: "compaction_off" } });
    const bad = await api.req("PATCH", `/api/agents/main/sessions/${s.id}`, { compact_keep_last_n: 999 });
    expect(bad.body).toMatchObject({ error: { code: "invalid_body", field: "compact_keep_last_n" } });
  });

  it("GET /api/sessions lists the live sessions of every agent, most recently active first", async () => {
    const a = await newSession("main", { title: "first" });
    const b = await newSession("helper", { title: "second" });
    h.fake.enqueue({ text: "ok" });
    await api.req("POST", `/api/agents/main/sessions/${a.id}/messages`, { message: "bump" });
    const all = await api.req<{ sessions: (Session & { title: string | null })[] }>("GET", "/api/sessions");
    expect(all.status).toBe(200);
    const ids = all.body.sessions.map((x) => x.id);
    expect(ids.indexOf(a.id)).toBe(0);
    expect(ids).toContain(b.id);
    expect(all.body.sessions.find((x) => x.id === b.id)).toMatchObject({
      agent_id: "helper",
      title: "second",
    });
    expect(all.body.sessions.every((x) => !x.archived)).toBe(true);
    const one = await api.req<{ sessions: Session[] }>("GET", "/api/sessions?limit=1");
    expect(one.body.sessions.map((x) => x.id)).toEqual([a.id]);
    const bad = await api.req("GET", "/api/sessions?limit=x");
    expect(bad.body).toMatchObject({ error: { code: "invalid_query", field: "limit" } });
  });
});

describe("/api compaction", () => {
  it("compacts, redirects posts to the archived session with 308, and shows the lineage", async () => {
    const s = await newSession("main", { compact_strategy: "manual", compact_keep_last_n: 2 });
    for (const word of ["alpha", "beta", "gamma"]) {
      h.fake.enqueue({ text: `noted ${word}` });
      await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: word });
    }
    h.fake.enqueue({ text: "Summary: the user listed alpha and beta." });
    const c = await api.req<{
      source_session_id: string;
      successor_session_id: string;
      summary_id: string;
      summary_text: string;
      summary: string;
    }>("POST", `/api/agents/main/sessions/${s.id}/compact`, {});
    expect(c.status).toBe(200);
    expect(c.body.source_session_id).toBe(s.id);
    expect(c.body.successor_session_id).toMatch(/[0-9a-f-]{36}/);
    expect(c.body.summary_text).toContain("alpha");
    expect(c.body.summary).toBe(c.body.summary_text);
    expect(c.body.summary_id).toMatch(/[0-9a-f-]{36}/);
    const successor = c.body.successor_session_id;

    const old = await api.req<Session>("GET", `/api/agents/main/sessions/${s.id}`);
    expect(old.body).toMatchObject({ archived: true, successor_id: successor, message_count: 6 });

    // A plain 308 without following: Location names the successor's messages URL.
    const raw = await fetch(`${h.base}/api/agents/main/sessions/${s.id}/messages`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "delta" }),
      redirect: "manual",
    });
    expect(raw.status).toBe(308);
    expect(raw.headers.get("location")).toBe(`/api/agents/main/sessions/${successor}/messages`);
    await raw.text();

    // Node's fetch follows it and repeats the POST with its body.
    h.fake.enqueue({ text: "noted delta" });
    const followed = await api.req<{ session_id: string; user: Msg; assistant: Msg }>(
      "POST",
      `/api/agents/main/sessions/${s.id}/messages`,
      { message: "delta" },
    );
    expect(followed.redirected).toBe(true);
    expect(followed.status).toBe(200);
    expect(followed.url).toBe(`${h.base}/api/agents/main/sessions/${successor}/messages`);
    expect(followed.body.user).toMatchObject({ content: "delta", session_id: successor });
    expect(followed.body.assistant).toMatchObject({ content: "noted delta", session_id: successor });
    // The model saw the summary, not the archived turns.
    const sent = JSON.stringify(h.fake.requests[h.fake.requests.length - 1]?.body?.messages ?? []);
    expect(sent).toContain("Summary: the user listed alpha and beta.");
    expect(sent).not.toContain('"alpha"');

    const oldMsgs = await api.req<{ messages: Msg[] }>("GET", `/api/agents/main/sessions/${s.id}/messages`);
    expect(oldMsgs.body.messages).toHaveLength(6);

    const lin = await api.req<{
      session: { id: string };
      backward: { id: string }[];
      forward: { id: string }[];
      summaries: { id: string; source_session_id: string; successor_session_id: string; summary: string }[];
    }>("GET", `/api/agents/main/sessions/${successor}/lineage`);
    expect(lin.body.session.id).toBe(successor);
    expect(lin.body.backward.map((e) => e.id)).toEqual([s.id]);
    expect(lin.body.forward).toEqual([]);
    expect(lin.body.summaries).toHaveLength(1);
    // The compaction response named the summary record the lineage shows.
    expect(lin.body.summaries[0]).toMatchObject({
      id: c.body.summary_id,
      source_session_id: s.id,
      successor_session_id: successor,
      summary: c.body.summary_text,
    });
    const fromOld = await api.req<{ forward: { id: string }[] }>(
      "GET",
      `/api/agents/main/sessions/${s.id}/lineage`,
    );
    expect(fromOld.body.forward.map((e) => e.id)).toEqual([successor]);

    // Compacting the archived id redirects as well.
    const again = await fetch(`${h.base}/api/agents/main/sessions/${s.id}/compact`, {
      method: "POST",
      headers: api.headers(),
      body: "{}",
      redirect: "manual",
    });
    expect(again.status).toBe(308);
    expect(again.headers.get("location")).toBe(`/api/agents/main/sessions/${successor}/compact`);
    await again.text();
    // And so does an abort (followed: nothing runs in the successor).
    const abort = await api.req("POST", `/api/agents/main/sessions/${s.id}/abort`);
    expect(abort.redirected).toBe(true);
    expect(abort.url).toBe(`${h.base}/api/agents/main/sessions/${successor}/abort`);
    expect(abort.body).toEqual({ session_id: successor, aborted: false });
  });

  it("refuses to compact a session whose strategy is off", async () => {
    const s = await newSession("main", { compact_strategy: "off" });
    h.fake.enqueue({ text: "ok" });
    await api.req("POST", `/api/agents/main/sessions/${s.id}/messages`, { message: "hi" });
    const r = await api.req("POST", `/api/agents/main/sessions/${s.id}/compact`, {});
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: { code: "compaction_off" } });
  });
});
