/**
 * Webhooks against a real daemon: shared-secret and HMAC signatures, templates, 202 at once, and
 * reply delivery to a channel target (the in-memory test channel registered on the daemon).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

let h: GatewayHarness;
let channel: MemoryChannel;
const sign = (secret: string, body: string): string =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: {
      token: "gw-token-hooks",
      hooks: {
        plain: { secret: "plain-secret-1", session: "hooks-plain" },
        signed: {
          hmac_secret: "hmac-secret-2",
          session: "hooks-signed",
          template: "Build {{json.build.id}} {{json.status}}",
          deliver: "test:owner",
        },
      },
    },
  });
  channel = new MemoryChannel("test");
  await channel.start();
  h.daemon.channels.add(channel);
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const history = (key: string) =>
  h.daemon.db
    .prepare(
      "SELECT m.role, m.content FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? ORDER BY m.id",
    )
    .all(key) as { role: string; content: string }[];

describe("webhooks", () => {
  it("a shared secret (bearer or X-Familiar-Secret) is required and checked", async () => {
    expect((await fetch(`${h.base}/hooks/plain`, { method: "POST", body: "hello" })).status).toBe(401);
    expect(
      (
        await fetch(`${h.base}/hooks/plain`, {
          method: "POST",
          body: "hello",
          headers: { "x-familiar-secret": "nope" },
        })
      ).status,
    ).toBe(401);
    h.fake.enqueue({ text: "got it" });
    const ok = await fetch(`${h.base}/hooks/plain`, {
      method: "POST",
      body: "deploy finished",
      headers: { "x-familiar-secret": "plain-secret-1" },
    });
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ accepted: true, sessionKey: "agent:main:gateway:hooks-plain" });
    await waitFor(() => history("agent:main:gateway:hooks-plain").length === 2);
    expect(history("agent:main:gateway:hooks-plain")[0]).toEqual({
      role: "user",
      content: "deploy finished",
    });
    // Containment: a webhook body is untrusted input; its session is tainted by it.
    const taint = h.daemon.db
      .prepare(
        "SELECT t.kind, t.detail FROM session_taint t JOIN session_heads hd ON hd.session_id = t.session_id WHERE hd.key = ?",
      )
      .all("agent:main:gateway:hooks-plain");
    expect(taint).toEqual([{ kind: "webhook", detail: "plain" }]);
  });

  it("an HMAC signature over the raw body is verified; the template fills fields; the reply is delivered", async () => {
    const body = JSON.stringify({ build: { id: 981 }, status: "failed" });
    expect(
      (
        await fetch(`${h.base}/hooks/signed`, {
          method: "POST",
          body,
          headers: { "x-familiar-signature": sign("wrong", body) },
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await fetch(`${h.base}/hooks/signed`, {
          method: "POST",
          body: body + " ",
          headers: { "x-familiar-signature": sign("hmac-secret-2", body) },
        })
      ).status,
    ).toBe(401);
    h.fake.enqueue({ text: "Build 981 failed; look at the logs." });
    const r = await fetch(`${h.base}/hooks/signed`, {
      method: "POST",
      body,
      headers: { "x-familiar-signature": sign("hmac-secret-2", body), "content-type": "application/json" },
    });
    expect(r.status).toBe(202);
    await waitFor(() => channel.sent.length > 0);
    expect(history("agent:main:gateway:hooks-signed")[0]?.content).toBe("Build 981 failed");
    expect(channel.sent[0]).toMatchObject({ target: "owner", text: "Build 981 failed; look at the logs." });
  });

  it("unknown hooks are 404", async () => {
    const r = await fetch(`${h.base}/hooks/nope`, { method: "POST", body: "x" });
    expect(r.status).toBe(404);
  });
});
