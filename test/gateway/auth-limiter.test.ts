/**
 * The failure limiter under abuse, against a real daemon on 127.0.0.1 (issue 32): requests without a
 * credential never lock anyone out, a correct token is never answered 429, a guesser waits for its
 * turn (driven by a fake clock, so nothing sleeps), and a guesser from another address (127.0.0.2)
 * slows nobody else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import { FakeClock } from "../../internal/core/clock.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "limiter-token-0123456789";

/** GET `path` from the given local address; resolves with the status code. */
function get(h: GatewayHarness, path: string, token: string | undefined, localAddress = "127.0.0.1") {
  return new Promise<{ status: number; retryAfter?: string }>((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: h.port,
        path,
        localAddress,
        agent: false,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers["retry-after"] ? { retryAfter: String(res.headers["retry-after"]) } : {}),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("the failure limiter", () => {
  let h: GatewayHarness;
  const clock = new FakeClock(Date.now());
  beforeAll(async () => {
    h = await startGatewayDaemon({
      clock,
      gateway: { token: TOKEN, rate_limit: { max_failures: 3, window_s: 60 } },
    });
  });
  afterAll(async () => {
    await h?.close();
  });
  const auth = () => h.daemon.parts.gateway!.runtime.auth;

  it("twenty requests without a token do not lock the owner out, over HTTP or websocket", async () => {
    for (let i = 0; i < 20; i++) expect((await get(h, "/api/sessions", undefined)).status).toBe(401);
    expect((await get(h, "/api/sessions", TOKEN)).status).toBe(200);
    expect((await get(h, "/v1/models", TOKEN)).status).toBe(200);
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "owner" });
    expect(c.hello.connId).toBeGreaterThan(0);
    await c.close();
    // And a websocket without a token is refused, but not counted either.
    for (let i = 0; i < 5; i++)
      await expect(GatewayClient.connect({ url: h.wsUrl, clientName: "stranger" })).rejects.toThrow(
        /missing gateway token/,
      );
    expect((await get(h, "/api/sessions", TOKEN)).status).toBe(200);
  });

  it("a guesser waits for its turn; the right token from the same address waits too but is never refused", async () => {
    for (let i = 0; i < 3; i++) expect((await get(h, "/api/sessions", "wrong-" + i)).status).toBe(401);
    // Slowed now: the next guess is not even checked until its turn (60 s / 3 = one per 20 s).
    let guess: { status: number } | undefined;
    void get(h, "/api/sessions", "wrong-3").then((r) => (guess = r));
    await waitFor(() => auth().waiting() === 1);
    let owner: { status: number } | undefined;
    void get(h, "/api/sessions", TOKEN).then((r) => (owner = r));
    await waitFor(() => auth().waiting() === 2);
    expect(guess).toBeUndefined();
    await clock.advance(20_000);
    await waitFor(() => guess);
    expect(guess?.status).toBe(401);
    expect(owner).toBeUndefined();
    await clock.advance(20_000);
    await waitFor(() => owner);
    expect(owner?.status).toBe(200);
    // The websocket's connect frame waits the same way and then connects.
    const pending = GatewayClient.connect({
      url: h.wsUrl,
      token: TOKEN,
      clientName: "owner",
      timeoutMs: 60_000,
    });
    await waitFor(() => auth().waiting() === 1);
    await clock.advance(20_000);
    const c = await pending;
    expect(c.hello.connId).toBeGreaterThan(0);
    await c.close();
    // A new window starts clean.
    await clock.advance(60_000);
    expect((await get(h, "/api/sessions", TOKEN)).status).toBe(200);
  });

  it("a locked-out guesser on another address slows nobody else; a flood of its guesses is refused unchecked", async () => {
    for (let i = 0; i < 3; i++)
      expect((await get(h, "/api/sessions", "bad-" + i, "127.0.0.2")).status).toBe(401);
    const flood = Array.from({ length: 20 }, (_, i) => get(h, "/api/sessions", "bad-x" + i, "127.0.0.2"));
    await waitFor(() => auth().waiting() === 16);
    // The owner on 127.0.0.1 is answered at once while the guesser's attempts wait.
    expect((await get(h, "/api/sessions", TOKEN)).status).toBe(200);
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "owner" });
    await c.close();
    // Beyond 16 waiting, the guesser gets 429 at once, with Retry-After; its tokens are not checked.
    await waitFor(async () => {
      const settled = await Promise.all(flood.map((p) => Promise.race([p, Promise.resolve(undefined)])));
      return settled.filter((r) => r?.status === 429).length === 4;
    });
    for (let i = 0; i < 16; i++) await clock.advance(20_000);
    const all = await Promise.all(flood);
    expect(all.filter((r) => r.status === 401)).toHaveLength(16);
    expect(all.filter((r) => r.status === 429).every((r) => Number(r.retryAfter) > 0)).toBe(true);
  });
});
