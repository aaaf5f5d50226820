/**
 * chat.send idempotency across a daemon restart: a client that retries with the same key after the
 * daemon came back gets the first answer, and no second turn runs. Keys are scoped per session: the
 * same key sent to another session is a new message, before and after a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import { scopedIdempotencyKey } from "../../internal/gateway/idempotency.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon();
});
afterAll(async () => {
  await h?.close();
});

interface SendResult {
  runId: string;
  sessionKey: string;
  status: string;
  duplicate?: boolean;
  result?: { text: string; finishReason: string };
}

describe("idempotency across a restart", () => {
  it("a repeated idempotencyKey after a restart returns the first answer without a second turn", async () => {
    const params = { sessionKey: "bills", message: "pay the gas bill", idempotencyKey: "k-restart-1" };
    h.fake.enqueue({ text: "Paid: 42 EUR." });
    const c1 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "before" });
    const first = await c1.request<SendResult>("chat.send", { ...params, wait: true });
    expect(first.result?.text).toBe("Paid: 42 EUR.");
    await c1.close();

    await h.restart();
    const calls = h.fake.requests.length;
    const c2 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "after" });
    const again = await c2.request<SendResult>("chat.send", params);
    expect(again).toMatchObject({
      runId: first.runId,
      sessionKey: "agent:main:gateway:bills",
      duplicate: true,
      status: "done",
      result: { text: "Paid: 42 EUR.", finishReason: "stop" },
    });
    const waited = await c2.request<SendResult>("chat.send", { ...params, wait: true });
    expect(waited.result?.text).toBe("Paid: 42 EUR.");
    expect(h.fake.requests.length).toBe(calls);
    const rows = h.daemon.db
      .prepare(
        "SELECT m.role FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ?",
      )
      .all("agent:main:gateway:bills");
    expect(rows).toHaveLength(2);
    // A new key is a new message.
    h.fake.enqueue({ text: "Done." });
    const fresh = await c2.request<SendResult>("chat.send", {
      ...params,
      idempotencyKey: "k-restart-2",
      wait: true,
    });
    expect(fresh.duplicate).toBeUndefined();
    expect(fresh.result?.text).toBe("Done.");
    await c2.close();
  }, 60_000);

  it("a key whose turn was cut off by a crash answers with the resumed turn's stored reply", async () => {
    const params = { sessionKey: "crashy", message: "book the table", idempotencyKey: "k-crash-1" };
    h.fake.enqueue({ text: "Booked for 8 pm." });
    const c1 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "before" });
    const first = await c1.request<SendResult>("chat.send", { ...params, wait: true });
    await c1.close();
    // What kill -9 leaves behind: the key was stored at submission, its result never was (the host
    // answers the interrupted turn after the restart under the same request id).
    const kvKey = `gw_idem:${scopedIdempotencyKey("agent:main:gateway:crashy", "k-crash-1")}`;
    const row = h.daemon.db.prepare("SELECT value FROM kv WHERE key = ?").get(kvKey) as {
      value: string;
    };
    const { result: _dropped, ...cut } = JSON.parse(row.value) as Record<string, unknown>;
    expect(cut.requestId).toEqual(expect.any(String));
    h.daemon.db.prepare("UPDATE kv SET value = ? WHERE key = ?").run(JSON.stringify(cut), kvKey);

    await h.restart();
    const calls = h.fake.requests.length;
    const c2 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "after" });
    const again = await c2.request<SendResult>("chat.send", params);
    expect(again).toMatchObject({
      runId: first.runId,
      duplicate: true,
      status: "done",
      result: { text: "Booked for 8 pm.", finishReason: "stop" },
    });
    expect(h.fake.requests.length).toBe(calls);
    await c2.close();
  }, 60_000);

  it("the same key in another session is a new message, before and after a restart", async () => {
    const key = "k-shared-1";
    const c1 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "scoped" });
    h.fake.enqueue({ text: "Groceries noted." }, { text: "Gym noted." });
    const a = await c1.request<SendResult>("chat.send", {
      sessionKey: "groceries",
      message: "buy milk",
      idempotencyKey: key,
      wait: true,
    });
    const b = await c1.request<SendResult>("chat.send", {
      sessionKey: "gym",
      message: "leg day",
      idempotencyKey: key,
      wait: true,
    });
    expect(a.result?.text).toBe("Groceries noted.");
    expect(b).toMatchObject({ sessionKey: "agent:main:gateway:gym", result: { text: "Gym noted." } });
    expect(b.duplicate).toBeUndefined();
    expect(b.runId).not.toBe(a.runId);
    // Within its own session the key still deduplicates (in memory).
    const calls = h.fake.requests.length;
    const dupA = await c1.request<SendResult>("chat.send", {
      sessionKey: "groceries",
      message: "buy milk",
      idempotencyKey: key,
    });
    expect(dupA).toMatchObject({ runId: a.runId, duplicate: true });
    expect(h.fake.requests.length).toBe(calls);
    await c1.close();

    await h.restart();
    const c2 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "scoped-after" });
    // After the restart each session answers its own first result for the shared key...
    const againB = await c2.request<SendResult>("chat.send", {
      sessionKey: "gym",
      message: "leg day",
      idempotencyKey: key,
    });
    expect(againB).toMatchObject({ runId: b.runId, duplicate: true, result: { text: "Gym noted." } });
    expect(h.fake.requests.length).toBe(calls);
    // ...and a third session with that key runs a turn of its own.
    h.fake.enqueue({ text: "Reading noted." });
    const c = await c2.request<SendResult>("chat.send", {
      sessionKey: "reading",
      message: "finish the novel",
      idempotencyKey: key,
      wait: true,
    });
    expect(c.duplicate).toBeUndefined();
    expect(c.result?.text).toBe("Reading noted.");
    expect(h.fake.requests.length).toBe(calls + 1);
    await c2.close();
  }, 60_000);

  it("a key stored before keys were scoped still answers, but only in its own session", async () => {
    // The row an older daemon wrote: the bare key, with the session it was sent to inside.
    const legacy = {
      runId: "run-legacy-1",
      sessionKey: "agent:main:gateway:old",
      result: { text: "Old answer." },
    };
    h.daemon.db
      .prepare("INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?)")
      .run("gw_idem:k-legacy-1", JSON.stringify(legacy), h.daemon.ctx.clock.now());
    const c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "legacy" });
    const calls = h.fake.requests.length;
    const same = await c.request<SendResult>("chat.send", {
      sessionKey: "old",
      message: "hi",
      idempotencyKey: "k-legacy-1",
    });
    expect(same).toMatchObject({ runId: "run-legacy-1", duplicate: true, result: { text: "Old answer." } });
    expect(h.fake.requests.length).toBe(calls);
    h.fake.enqueue({ text: "New answer." });
    const other = await c.request<SendResult>("chat.send", {
      sessionKey: "new",
      message: "hi",
      idempotencyKey: "k-legacy-1",
      wait: true,
    });
    expect(other.duplicate).toBeUndefined();
    expect(other.result?.text).toBe("New answer.");
    await c.close();
  }, 60_000);

  it("a slash command repeated with its key in the same session runs once; in another session it runs again", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "commands" });
    const headOf = (key: string): string | undefined =>
      (
        h.daemon.db.prepare("SELECT session_id AS id FROM session_heads WHERE key = ?").get(key) as
          { id: string } | undefined
      )?.id;
    h.fake.enqueue({ text: "Noted." });
    await c.request<SendResult>("chat.send", { sessionKey: "notes", message: "remember milk", wait: true });
    const start = headOf("agent:main:gateway:notes");
    const first = await c.request<SendResult>("chat.send", {
      sessionKey: "notes",
      message: "/new",
      idempotencyKey: "k-new-1",
    });
    const afterFirst = headOf("agent:main:gateway:notes");
    expect(start).toEqual(expect.any(String));
    expect(afterFirst).toEqual(expect.any(String));
    expect(afterFirst).not.toBe(start);
    const again = await c.request<SendResult>("chat.send", {
      sessionKey: "notes",
      message: "/new",
      idempotencyKey: "k-new-1",
    });
    expect(again).toMatchObject({ runId: first.runId, duplicate: true, status: "done" });
    expect(headOf("agent:main:gateway:notes")).toBe(afterFirst);
    const other = await c.request<SendResult>("chat.send", {
      sessionKey: "errands",
      message: "/new",
      idempotencyKey: "k-new-1",
    });
    expect(other.duplicate).toBeUndefined();
    expect(other.runId).not.toBe(first.runId);
    await c.close();

    // After a restart the retry still answers the first reply and does not reset again.
    await h.restart();
    const c2 = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "commands-after" });
    const afterRestart = await c2.request<SendResult & { command?: string }>("chat.send", {
      sessionKey: "notes",
      message: "/new",
      idempotencyKey: "k-new-1",
    });
    expect(afterRestart).toMatchObject({
      runId: first.runId,
      duplicate: true,
      status: "done",
      command: "new",
      result: { text: first.result?.text },
    });
    expect(headOf("agent:main:gateway:notes")).toBe(afterFirst);
    await c2.close();
  }, 60_000);
});
