/**
 * Issue 34, `previous_response_id` mapped onto sessions: a chain of `/v1/responses` is a Familiar
 * session (listed by `/api/sessions`), a follow-up from the latest response continues it, a follow-up
 * from an older one forks a new session seeded with exactly that conversation, `store: false` stays
 * ephemeral, and a response that does not exist or belongs to another agent is refused. Driven by the
 * official `openai` SDK against a real daemon; the fake model server records what the model saw.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import OpenAI from "openai";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "v1-sessions-token";
let h: GatewayHarness;
let client: OpenAI;

type Sent = { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string };
const sent = (i: number): Sent[] => (h.fake.requests[i]?.body?.messages ?? []) as unknown as Sent[];
const texts = (i: number): string[] =>
  sent(i)
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => String(typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
type Row = {
  role: string;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  status: string;
};
const rows = (key: string): Row[] =>
  h.daemon.db
    .prepare(
      `SELECT m.role, m.content, m.tool_calls, m.tool_call_id, m.status FROM messages m
        JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? ORDER BY m.id`,
    )
    .all(key) as Row[];

/** The session a response ran in, from the `X-Familiar-Session` header. */
async function create(
  body: OpenAI.Responses.ResponseCreateParamsNonStreaming,
): Promise<{ r: OpenAI.Responses.Response; session: string | null }> {
  const { data, response } = await client.responses.create(body).withResponse();
  return { r: data, session: response.headers.get("x-familiar-session") };
}

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { helper: { description: "second agent" } } },
  });
  client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

describe("a response chain is a session", () => {
  it("starts a session, continues it from the latest response (streamed), forks on a branch", async () => {
    h.fake.enqueue({ text: "Noted: 7." }, { text: "You said 7.", chunkSize: 3 }, { text: "Seven, still." });
    const a = await create({ model: "familiar", input: "Remember 7." });
    expect(a.session).toBe(`agent:main:gateway:${a.r.id}`);
    const listed = (await (await fetch(`${h.base}/api/sessions`, { headers: h.headers() })).json()) as {
      sessions: { key: string }[];
    };
    expect(listed.sessions.map((s) => s.key)).toContain(a.session);

    // The latest response: the same session continues, streamed.
    const stream = await client.responses
      .create({ model: "familiar", input: "What number?", previous_response_id: a.r.id, stream: true })
      .withResponse();
    expect(stream.response.headers.get("x-familiar-session")).toBe(a.session);
    let b: OpenAI.Responses.Response | undefined;
    for await (const ev of stream.data) if (ev.type === "response.completed") b = ev.response;
    expect(b?.output_text ?? (b?.output[0] as { content: { text: string }[] }).content[0]!.text).toBe(
      "You said 7.",
    );
    expect(texts(1)).toEqual(["Remember 7.", "Noted: 7.", "What number?"]);
    expect(rows(a.session!).map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:Remember 7.",
      "assistant:Noted: 7.",
      "user:What number?",
      "assistant:You said 7.",
    ]);

    // A branch from the first response: a new session with exactly the first conversation.
    const c = await create({ model: "familiar", input: "Double it?", previous_response_id: a.r.id });
    expect(c.session).toBe(`agent:main:gateway:${c.r.id}`);
    expect(texts(2)).toEqual(["Remember 7.", "Noted: 7.", "Double it?"]);
    expect(rows(c.session!).map((m) => m.content)).toEqual([
      "Remember 7.",
      "Noted: 7.",
      "Double it?",
      "Seven, still.",
    ]);
    expect(rows(a.session!)).toHaveLength(4); // the original is untouched
    expect((await client.responses.retrieve(b!.id)).output_text ?? "").toBe("You said 7.");
  });

  it("a follow-up from the branch's latest response continues the branch, not the original", async () => {
    h.fake.enqueue({ text: "A1" }, { text: "A2" }, { text: "B2" }, { text: "B3" });
    const a1 = await create({ model: "familiar", input: "q1" });
    const a2 = await create({ model: "familiar", input: "q2", previous_response_id: a1.r.id });
    const b2 = await create({ model: "familiar", input: "q2b", previous_response_id: a1.r.id });
    const b3 = await create({ model: "familiar", input: "q3b", previous_response_id: b2.r.id });
    expect(b3.session).toBe(b2.session);
    expect(b2.session).not.toBe(a2.session);
    expect(texts(3)).toEqual(["q1", "A1", "q2b", "B2", "q3b"]);
  });

  it("after a compaction the chain continues in the successor session, on the summary", async () => {
    let last: { r: OpenAI.Responses.Response; session: string | null } | undefined;
    for (const word of ["alpha", "beta", "gamma"]) {
      h.fake.enqueue({ text: `noted ${word}` });
      last = await create({
        model: "familiar",
        input: word,
        ...(last ? { previous_response_id: last.r.id } : {}),
      });
    }
    const key = last!.session!;
    const api = async (method: string, path: string, body: unknown): Promise<Response> =>
      fetch(`${h.base}${path}`, { method, headers: h.headers(), body: JSON.stringify(body) });
    const sid = (
      h.daemon.db.prepare("SELECT session_id FROM session_heads WHERE key = ?").get(key) as {
        session_id: string;
      }
    ).session_id;
    expect((await api("PATCH", `/api/agents/main/sessions/${sid}`, { compact_keep_last_n: 2 })).status).toBe(
      200,
    );
    h.fake.enqueue({ text: "Summary: the user listed alpha and beta." });
    expect((await api("POST", `/api/agents/main/sessions/${sid}/compact`, {})).status).toBe(200);
    const n = h.fake.requests.length;
    h.fake.enqueue({ text: "Three words." });
    const next = await create({ model: "familiar", input: "How many?", previous_response_id: last!.r.id });
    expect(next.session).toBe(key);
    const seen = JSON.stringify(sent(n));
    expect(seen).toContain("Summary: the user listed alpha and beta.");
    expect(seen).not.toContain("noted alpha");
    expect(texts(n).slice(-1)).toEqual(["How many?"]);
  });

  it("two follow-ups from the same response at once: one continues, the other forks", async () => {
    h.fake.enqueue({ text: "A1" });
    const a = await create({ model: "familiar", input: "q1" });
    h.fake.enqueue({ text: "slow answer", chunkSize: 1, delayMs: 30 }, { text: "quick answer" });
    const slow = create({ model: "familiar", input: "slow q", previous_response_id: a.r.id });
    await vi.waitFor(() => expect(h.fake.requests.length).toBe(2), { timeout: 10_000 });
    const quick = await create({ model: "familiar", input: "quick q", previous_response_id: a.r.id });
    const done = await slow;
    expect(done.session).toBe(a.session);
    expect(quick.session).not.toBe(a.session);
    expect(texts(1)).toEqual(["q1", "A1", "slow q"]);
    expect(texts(2)).toEqual(["q1", "A1", "quick q"]);
  });

  it("X-Familiar-Session names the session of a new chain; store: false stays ephemeral", async () => {
    h.fake.enqueue({ text: "hi Ann" }, { text: "ephemeral" });
    const named = await client.responses
      .create({ model: "familiar", input: "I am Ann" }, { headers: { "x-familiar-session": "ann" } })
      .withResponse();
    expect(named.response.headers.get("x-familiar-session")).toBe("agent:main:gateway:ann");
    expect(rows("agent:main:gateway:ann").map((m) => m.content)).toEqual(["I am Ann", "hi Ann"]);
    const before = (h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n;
    const eph = await create({ model: "familiar", input: "nothing kept", store: false });
    expect(eph.session).toBeNull();
    expect((h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n).toBe(before);
  });

  it("an Idempotency-Key repeat answers with the same response and stores nothing twice", async () => {
    h.fake.enqueue({ text: "once" });
    const opts = { headers: { "idempotency-key": "resp-key-1" } };
    const body = { model: "familiar", input: "say once" };
    const one = await client.responses.create(body, opts).withResponse();
    const two = await client.responses.create(body, opts).withResponse();
    expect(two.data.id).toBe(one.data.id);
    expect(two.response.headers.get("idempotent-replayed")).toBe("true");
    const key = one.response.headers.get("x-familiar-session")!;
    expect(rows(key).map((m) => m.content)).toEqual(["say once", "once"]);
    expect(h.fake.requests).toHaveLength(1);
  });

  it("a streamed repeat with the same Idempotency-Key streams the stored response again", async () => {
    h.fake.enqueue({ text: "streamed once", chunkSize: 4 });
    const opts = { headers: { "idempotency-key": "resp-key-stream" } };
    const body = { model: "familiar", input: "stream once", stream: true as const };
    const run = async (): Promise<{ done?: OpenAI.Responses.Response; key: string | null }> => {
      const { data, response } = await client.responses.create(body, opts).withResponse();
      let done: OpenAI.Responses.Response | undefined;
      for await (const ev of data) if (ev.type === "response.completed") done = ev.response;
      return { done, key: response.headers.get("x-familiar-session") };
    };
    const one = await run();
    const two = await run();
    expect(two.done?.id).toBe(one.done?.id);
    expect(two.key).toBe(one.key);
    expect(rows(one.key!).map((m) => m.content)).toEqual(["stream once", "streamed once"]);
    expect(h.fake.requests).toHaveLength(1);
  });

  it("the SDK's retry after an upstream 500 stores the message once", async () => {
    h.fake.enqueue({ error: { status: 500, message: "upstream hiccup" } }, { text: "Recovered." });
    const retrying = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 2 });
    const { data, response } = await retrying.responses
      .create({ model: "familiar", input: "again please" })
      .withResponse();
    expect(data.output_text).toBe("Recovered.");
    const key = response.headers.get("x-familiar-session")!;
    // The failed attempt's cause stays in the transcript (status error, never sent to the model).
    const kept = rows(key).filter((m) => m.status !== "error");
    expect(kept.map((m) => m.content)).toEqual(["again please", "Recovered."]);
    expect(h.fake.requests).toHaveLength(2);
    expect(texts(1)).toEqual(["again please"]);
  });
});

describe("taint follows the conversation", () => {
  it("a fork of a tainted chain inherits its taint", async () => {
    mkdirSync(join(h.dir, "workspace", "inbox"), { recursive: true });
    writeFileSync(join(h.dir, "workspace", "inbox", "note.txt"), "a note from a stranger");
    h.fake.enqueue(
      { toolCalls: [{ id: "own_r", name: "read_file", arguments: { path: "inbox/note.txt" } }] },
      { text: "Read it." },
      { text: "Later." },
      { text: "Branched." },
    );
    const a = await create({ model: "familiar", input: "Read my inbox note." });
    await create({ model: "familiar", input: "And then?", previous_response_id: a.r.id });
    const fork = await create({ model: "familiar", input: "Other way?", previous_response_id: a.r.id });
    expect(fork.session).not.toBe(a.session);
    const taint = (key: string): { kind: string; detail: string }[] =>
      h.daemon.db
        .prepare(
          "SELECT kind, detail FROM session_taint WHERE session_id = (SELECT session_id FROM session_heads WHERE key = ?)",
        )
        .all(key) as { kind: string; detail: string }[];
    expect(taint(a.session!).map((t) => t.kind)).toContain("inbox_file");
    const inherited = taint(fork.session!);
    expect(inherited.some((t) => t.kind === "inherited" && t.detail.includes("inbox_file"))).toBe(true);
  });
});

describe("previous_response_id is checked", () => {
  it("a response that does not exist: 404 naming previous_response_id", async () => {
    const err = await client.responses
      .create({ model: "familiar", input: "x", previous_response_id: "resp_nope" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as { param?: string }).param).toBe("previous_response_id");
    expect(h.fake.requests).toHaveLength(0);
  });

  it("a response of another agent: 400 naming previous_response_id, nothing runs", async () => {
    h.fake.enqueue({ text: "main's secret" });
    const a = await create({ model: "familiar", input: "my secret is 42" });
    const err = await client.responses
      .create({ model: "familiar/helper", input: "what was it?", previous_response_id: a.r.id })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe("previous_response_id");
    expect(String((err as Error).message)).toContain('belongs to agent "main"');
    expect(h.fake.requests).toHaveLength(1);
  });
});
