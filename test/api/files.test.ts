/**
 * `POST /api/files/send` and the websocket method `files.send` in the real daemon: a workspace file
 * reaches the Telegram chat (fake Bot API, multipart upload); a path outside the workspace is
 * refused; a stranger without the gateway token is refused on both doors and nothing is uploaded.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import { startFakeTelegram, type FakeTelegramServer } from "../fakes/telegram-server.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, type ApiClient } from "./api-client.js";

const TOKEN = "files-token";
const OWNER = 111;

describe("sending workspace files through the gateway", () => {
  let h: GatewayHarness;
  let api: ApiClient;
  let tg: FakeTelegramServer;
  beforeAll(async () => {
    tg = await startFakeTelegram();
    h = await startGatewayDaemon({
      gateway: { token: TOKEN },
      config: {
        channels: {
          telegram: {
            enabled: true,
            token: tg.token,
            api_root: tg.apiRoot,
            dm_policy: "allowlist",
            allow_from: [OWNER],
          },
        },
      },
    });
    api = apiClient(h.base, TOKEN);
    mkdirSync(join(h.dir, "workspace", "reports"), { recursive: true });
    writeFileSync(join(h.dir, "workspace", "reports", "q3.pdf"), "%PDF-1.4 fake report");
    writeFileSync(join(h.dir, "outside.txt"), "not yours");
  });
  afterAll(async () => {
    await h?.close();
    await tg?.close();
  });

  it("the daemon gives agents the send_file tool", () => {
    expect(h.daemon.parts.tools.registry.get("send_file")?.group).toBe("messaging");
  });

  it("POST /api/files/send uploads the file as a document with its caption", async () => {
    const r = await waitFor(async () => {
      const res = await api.req("POST", "/api/files/send", {
        target: `telegram:${OWNER}`,
        path: "reports/q3.pdf",
        caption: "Q3 report",
      });
      return res.status === 200 ? res : undefined;
    });
    expect(r.body).toMatchObject({ ok: true });
    expect(tg.sentFiles).toHaveLength(1);
    expect(tg.sentFiles[0]).toMatchObject({ method: "sendDocument", name: "q3.pdf", caption: "Q3 report" });
    expect(tg.sentFiles[0]?.data.toString()).toBe("%PDF-1.4 fake report");
  });

  it("refuses a path outside the workspace (400) and a missing file (404)", async () => {
    const out = await api.req("POST", "/api/files/send", {
      target: `telegram:${OWNER}`,
      path: "../outside.txt",
    });
    expect(out.status).toBe(400);
    expect(out.body).toMatchObject({ error: { code: "path_outside_workspace" } });
    const abs = await api.req("POST", "/api/files/send", {
      target: `telegram:${OWNER}`,
      path: join(h.dir, "outside.txt"),
    });
    expect(abs.status).toBe(400);
    const missing = await api.req("POST", "/api/files/send", {
      target: `telegram:${OWNER}`,
      path: "nope.txt",
    });
    expect(missing.status).toBe(404);
    expect(tg.sentFiles).toHaveLength(1);
  });

  it("a stranger without the token is refused on HTTP and on the websocket", async () => {
    const res = await fetch(`${h.base}/api/files/send`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ target: `telegram:${OWNER}`, path: "reports/q3.pdf" }),
    });
    expect(res.status).toBe(401);
    const wrong = await fetch(`${h.base}/api/files/send`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer wrong" },
      body: JSON.stringify({ target: `telegram:${OWNER}`, path: "reports/q3.pdf" }),
    });
    expect(wrong.status).toBe(401);
    await expect(
      GatewayClient.connect({ url: h.wsUrl, token: "wrong", clientName: "stranger" }),
    ).rejects.toThrow();
    expect(tg.sentFiles).toHaveLength(1);
  });

  it("files.send over the websocket with the token sends the file", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "files" });
    try {
      const r = (await c.request("files.send", {
        target: `telegram:${OWNER}`,
        path: "reports/q3.pdf",
        as: "document",
      })) as { result: string };
      expect(r.result).toContain("sent reports/q3.pdf");
      await expect(
        c.request("files.send", { target: `telegram:${OWNER}`, path: "../outside.txt" }),
      ).rejects.toThrow(/outside/);
    } finally {
      await c.close();
    }
    expect(tg.sentFiles).toHaveLength(2);
  });
});
