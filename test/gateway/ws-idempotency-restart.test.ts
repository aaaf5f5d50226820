/**
 * chat.send idempotency across a daemon restart: a client that retries with the same key after the
 * daemon came back gets the first answer, and no second turn runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
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
    const c1 = await GatewayClient.connect({ url: h.wsUrl, clientName: "before" });
    const first = await c1.request<SendResult>("chat.send", { ...params, wait: true });
    expect(first.result?.text).toBe("Paid: 42 EUR.");
    await c1.close();

    await h.restart();
    const calls = h.fake.requests.length;
    const c2 = await GatewayClient.connect({ url: h.wsUrl, clientName: "after" });
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
    const c1 = await GatewayClient.connect({ url: h.wsUrl, clientName: "before" });
    const first = await c1.request<SendResult>("chat.send", { ...params, wait: true });
    await c1.close();
    // What kill -9 leaves behind: the key was stored at submission, its result never was (the host
    // answers the interrupted turn after the restart under the same request id).
    const row = h.daemon.db.prepare("SELECT value FROM kv WHERE key = ?").get("gw_idem:k-crash-1") as {
      value: string;
    };
    const { result: _dropped, ...cut } = JSON.parse(row.value) as Record<string, unknown>;
    expect(cut.requestId).toEqual(expect.any(String));
    h.daemon.db
      .prepare("UPDATE kv SET value = ? WHERE key = ?")
      .run(JSON.stringify(cut), "gw_idem:k-crash-1");

    await h.restart();
    const calls = h.fake.requests.length;
    const c2 = await GatewayClient.connect({ url: h.wsUrl, clientName: "after" });
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
});
