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
        github: { hmac_secret: "It's a Secret to Everybody", session: "hooks-github" },
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

describe("webhooks as GitHub sends them, and replays", () => {
  // GitHub's documented example ("Validating webhook deliveries"): this secret and payload give
  // exactly this X-Hub-Signature-256.
  const GITHUB_BODY = "Hello, World!";
  const GITHUB_SIG = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
  const post = (headers: Record<string, string>, body = GITHUB_BODY) =>
    fetch(`${h.base}/hooks/github`, { method: "POST", body, headers });

  it("a GitHub-signed delivery (X-Hub-Signature-256) runs, once: a replay is answered duplicate", async () => {
    expect(sign("It's a Secret to Everybody", GITHUB_BODY)).toBe(GITHUB_SIG);
    h.fake.enqueue({ text: "hello to you" });
    const first = await post({
      "x-hub-signature-256": GITHUB_SIG,
      "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    expect(first.status).toBe(202);
    await waitFor(() => history("agent:main:gateway:hooks-github").length === 2);
    expect(history("agent:main:gateway:hooks-github")[0]).toEqual({ role: "user", content: "Hello, World!" });

    // The same delivery again (a replay, or GitHub's own redelivery): not run.
    const again = await post({
      "x-hub-signature-256": GITHUB_SIG,
      "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ accepted: false, duplicate: true });
    // A thief changes the unsigned delivery id (or drops it): the signed body is what counts.
    const forged = await post({
      "x-hub-signature-256": GITHUB_SIG,
      "x-github-delivery": "00000000-0000-0000-0000-000000000000",
    });
    expect(await forged.json()).toMatchObject({ duplicate: true });
    const bare = await post({ "x-hub-signature-256": GITHUB_SIG });
    expect(await bare.json()).toMatchObject({ duplicate: true });
    // Ten copies at once: none runs.
    const burst = await Promise.all(
      Array.from({ length: 10 }, () => post({ "x-hub-signature-256": GITHUB_SIG })),
    );
    expect(burst.every((r) => r.status === 200)).toBe(true);
    expect(history("agent:main:gateway:hooks-github")).toHaveLength(2);
    expect(h.fake.requests.length).toBe(1);
    // A wrong signature is still 401 and names both headers it reads.
    const bad = await post({ "x-hub-signature-256": sign("wrong", GITHUB_BODY) });
    expect(bad.status).toBe(401);
    expect((await bad.json()) as unknown).toMatchObject({
      error: { message: expect.stringMatching(/X-Hub-Signature-256/) },
    });
  });

  it("a shared-secret hook runs a delivery id once; new ids run", async () => {
    const send = (id: string) =>
      fetch(`${h.base}/hooks/plain`, {
        method: "POST",
        body: "nightly backup done",
        headers: { "x-familiar-secret": "plain-secret-1", "x-familiar-delivery": id },
      });
    const before = history("agent:main:gateway:hooks-plain").length;
    h.fake.enqueue({ text: "noted" });
    expect((await send("backup-2026-11-25")).status).toBe(202);
    await waitFor(() => history("agent:main:gateway:hooks-plain").length === before + 2);
    expect(await (await send("backup-2026-11-25")).json()).toMatchObject({ duplicate: true });
    h.fake.enqueue({ text: "noted again" });
    expect((await send("backup-2026-11-26")).status).toBe(202);
    await waitFor(() => history("agent:main:gateway:hooks-plain").length === before + 4);
    expect((await send("x".repeat(300))).status).toBe(400);
  });

  it("a replay is refused across a daemon restart (the marks are in SQLite)", async () => {
    await h.restart();
    const again = await post({ "x-hub-signature-256": GITHUB_SIG });
    expect(await again.json()).toMatchObject({ duplicate: true });
  });
});
