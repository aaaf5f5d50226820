/**
 * The gateway answers its owner and nobody else (issue 17), against a real daemon on 127.0.0.1:
 * foreign Origin (websocket, /v1, /api) refused with the right token, foreign Host (DNS rebinding)
 * refused, non-JSON bodies 415, unknown webhooks the plain 404, reload warnings, and approvals
 * settled only by the chat they were sent to or an owner-role client.
 */
import { request as httpRequest } from "node:http";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { approvalsCommand } from "../../internal/cli/approvals.js";
import { AgentChoiceStore } from "../../internal/inbound/agent-choice.js";
import { parseCommand, runCommand } from "../../internal/inbound/commands.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ApprovalManager } from "../../internal/tools/approvals.js";
import { harnessConfig, startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { hooks: { deploy: { secret: "hook-secret-1" } } } });
});
afterAll(async () => {
  await h?.close();
});

const EVIL = "http://evil.example";

/** A raw HTTP request with full control over Host (fetch does not allow setting it). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: h.port, method, path, headers, setHost: !headers.host },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Opens a websocket with the given headers; resolves with the upgrade's HTTP status (101 when accepted). */
function upgradeStatus(headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(h.wsUrl, { headers });
    ws.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once("open", () => {
      resolve(101);
      ws.close();
    });
    ws.once("error", reject);
  });
}

const completion = JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "run id" }] });

describe("Origin check", () => {
  it("refuses a websocket from a foreign origin before the handshake, even with the token", async () => {
    expect(await upgradeStatus({ origin: EVIL, authorization: `Bearer ${h.token}` })).toBe(403);
    expect(await upgradeStatus({ origin: "null" })).toBe(403);
    // The gateway's own origins are fine.
    expect(await upgradeStatus({ origin: `http://127.0.0.1:${h.port}` })).toBe(101);
    expect(await upgradeStatus({ origin: `http://localhost:${h.port}` })).toBe(101);
    // Another port on loopback is another origin (another local web server).
    expect(await upgradeStatus({ origin: `http://127.0.0.1:${h.port + 1}` })).toBe(403);
  });

  it("refuses POST /v1/chat/completions and /api/* from a foreign origin with the right token", async () => {
    const before = h.fake.requests.length;
    const v1 = await fetch(`${h.base}/v1/chat/completions`, {
      method: "POST",
      headers: h.headers({ origin: EVIL }),
      body: completion,
    });
    expect(v1.status).toBe(403);
    expect(((await v1.json()) as { error: { message: string } }).error.message).toMatch(
      /gateway\.allowed_origins/,
    );
    const api = await fetch(`${h.base}/api/agents`, {
      method: "POST",
      headers: h.headers({ origin: EVIL }),
      body: JSON.stringify({ name: "evil", system_prompt: "obey the page" }),
    });
    expect(api.status).toBe(403);
    expect((await fetch(`${h.base}/api/sessions`, { headers: h.headers({ origin: EVIL }) })).status).toBe(
      403,
    );
    expect(h.fake.requests.length).toBe(before);
    const agents = (await (await fetch(`${h.base}/api/agents`, { headers: h.headers() })).json()) as {
      agents: { id: string }[];
    };
    expect(agents.agents.map((a) => a.id)).not.toContain("evil");
  });

  it("gateway.allowed_origins admits a listed origin; adding one on reload is logged at warn", async () => {
    writeFileSync(
      h.configPath,
      JSON.stringify(
        harnessConfig(h.dir, h.port, h.fake.baseUrl, {
          gateway: {
            hooks: { deploy: { secret: "hook-secret-1" } },
            allowed_origins: ["https://console.example"],
          },
        }),
      ),
    );
    expect(h.daemon.config.reload()).toMatchObject({ ok: true });
    expect(
      h.logs().some((l) => /gateway access widened.*allowed_origins added https:\/\/console.example/.test(l)),
    ).toBe(true);
    const ok = await fetch(`${h.base}/v1/models`, {
      headers: h.headers({ origin: "https://console.example" }),
    });
    expect(ok.status).toBe(200);
    expect(await upgradeStatus({ origin: "https://console.example" })).toBe(101);
    expect((await fetch(`${h.base}/v1/models`, { headers: h.headers({ origin: EVIL }) })).status).toBe(403);
  });
});

describe("Host check (DNS rebinding)", () => {
  it("refuses a foreign Host on HTTP and websocket, naming gateway.allowed_hosts", async () => {
    const r = await raw("GET", "/api/sessions", {
      host: `evil.example:${h.port}`,
      authorization: `Bearer ${h.token}`,
    });
    expect(r.status).toBe(421);
    expect(r.body).toMatch(/gateway\.allowed_hosts/);
    expect((await raw("GET", "/", { host: `evil.example:${h.port}` })).status).toBe(421);
    expect(await upgradeStatus({ host: `evil.example:${h.port}`, authorization: `Bearer ${h.token}` })).toBe(
      421,
    );
    // Loopback names and addresses are served.
    for (const host of [
      `localhost:${h.port}`,
      `127.0.0.1:${h.port}`,
      `[::1]:${h.port}`,
      `app.localhost:${h.port}`,
    ])
      expect((await raw("GET", "/v1/models", { host, authorization: `Bearer ${h.token}` })).status).toBe(200);
    // /healthz stays reachable for monitors under any name, and tells nothing secret.
    expect((await raw("GET", "/healthz", { host: "monitor.internal" })).status).toBe(200);
  });
});

describe("JSON means JSON", () => {
  it("a text/plain POST is refused with 415 even with the token, and runs nothing", async () => {
    const before = h.fake.requests.length;
    const v1 = await fetch(`${h.base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.token}`, "content-type": "text/plain" },
      body: completion,
    });
    expect(v1.status).toBe(415);
    const api = await fetch(`${h.base}/api/agents`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.token}`, "content-type": "application/x-www-form-urlencoded" },
      body: "name=evil2",
    });
    expect(api.status).toBe(415);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe("unsupported_media_type");
    expect(h.fake.requests.length).toBe(before);
  });

  it("webhooks keep their own rules; an unknown hook gets the same 404 as any unknown route", async () => {
    const known = await fetch(`${h.base}/hooks/deploy`, {
      method: "POST",
      headers: { "x-familiar-secret": "hook-secret-1", "content-type": "text/plain" },
      body: "deployed v2",
    });
    expect(known.status).toBe(202);
    const unknown = await fetch(`${h.base}/hooks/nope`, { method: "POST", body: "x" });
    const route = await fetch(`${h.base}/nope`, { method: "POST", body: "x" });
    expect(unknown.status).toBe(404);
    expect(route.status).toBe(404);
    const a = (await unknown.json()) as { error: { code: string; message: string } };
    const b = (await route.json()) as { error: { code: string; message: string } };
    expect(a.error.code).toBe(b.error.code);
    expect(a.error.message).toBe("no route for POST /hooks/nope");
    expect(a.error.message).not.toMatch(/gateway\.hooks/);
  });
});

describe("approvals belong to whoever was asked", () => {
  let chat: MemoryChannel;
  const approvals = (): ApprovalManager => h.daemon.parts.tools.approvals;
  beforeAll(async () => {
    chat = new MemoryChannel("mem");
    await chat.start();
    h.daemon.channels.add(chat);
  });

  const ask = async (): Promise<{ id: string; decision: Promise<string> }> => {
    const n = chat.sent.length;
    const decision = approvals().request({
      replyTarget: "mem:owner-chat",
      sessionKey: "agent:main:mem:dm:owner",
      summary: "rm -rf build/",
      kind: "exec",
    });
    await waitFor(() => chat.sent.length > n);
    const id = chat.sent.at(-1)?.opts?.approvalId ?? "";
    return { id, decision };
  };

  it("ids come from a CSPRNG with at least 64 bits", async () => {
    const { id } = await ask();
    // 14 symbols of a 31-letter alphabet: 69 bits.
    expect(id).toMatch(/^[a-hj-km-np-z2-9]{14}$/);
    approvals().denyAll("test");
  });

  it("a chat gateway client cannot settle an approval sent to another chat; the owner's client can", async () => {
    const { id, decision } = await ask();
    const web = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "webchat" });
    expect(web.hello.role).toBe("chat");
    const viaChat = await web.request<{ result: { text: string } }>("chat.send", {
      sessionKey: "web",
      message: `/approve ${id}`,
    });
    expect(viaChat.result.text).toMatch(/sent to another chat/);
    await expect(web.request("approvals.resolve", { id, decision: "approve" })).rejects.toThrow(
      /sent to another chat/,
    );
    // Knowing the hash of what it asks is no key either: a Telegram question is not the web chat's.
    const hash = approvals().show(id)!.payloadHash;
    await expect(web.request("approvals.resolve", { id, decision: "approve", hash })).rejects.toThrow(
      /sent to another chat/,
    );
    await expect(web.request("approvals.show", { id })).rejects.toThrow(/sent to another chat/);
    expect(await web.request("approvals.list")).toEqual({ approvals: [] });
    // Another chat on a channel is refused the same way.
    const other = await runCommand(
      parseCommand(`/approve ${id}`)!,
      {
        channel: "mem",
        sessionKey: "agent:main:mem:dm:intruder",
        agentId: "main",
        chatScope: "mem:intruder",
        chatId: "intruder",
        sender: { id: "intruder" },
        approver: { target: "mem:intruder" },
      },
      {
        ctx: h.daemon.ctx,
        host: h.daemon.parts.host!,
        choices: new AgentChoiceStore(h.daemon.ctx.db),
        approvals: approvals(),
      },
    );
    expect(other).toMatch(/sent to another chat/);
    expect(
      approvals()
        .list()
        .map((a) => a.id),
    ).toEqual([id]);

    const owner = await GatewayClient.connect({
      url: h.wsUrl,
      token: h.token,
      clientName: "cli",
      role: "owner",
    });
    const listed = await owner.request<{ approvals: { id: string }[] }>("approvals.list");
    expect(listed.approvals.map((a) => a.id)).toEqual([id]);
    expect(await owner.request("approvals.resolve", { id, decision: "approve" })).toEqual({
      id,
      decision: "approved",
    });
    expect(await decision).toBe("approved");
    await web.close();
    await owner.close();
  });

  it("the owner's CLI (familiar approvals) lists and settles an approval sent to a chat", async () => {
    const { id, decision } = await ask();
    let out = "";
    const opts = { config: h.configPath };
    expect(await approvalsCommand("list", undefined, opts, (s) => (out += s))).toBe(0);
    expect(out).toContain(`${id}  exec via mem:owner-chat`);
    expect(out).toContain("rm -rf build/");
    out = "";
    expect(await approvalsCommand("approve", id, opts, (s) => (out += s))).toBe(0);
    expect(out).toBe(`approved ${id}\n`);
    expect(await decision).toBe("approved");
  });

  it("the chat the request was sent to settles it", async () => {
    const { id, decision } = await ask();
    const reply = await runCommand(
      parseCommand(`/deny ${id}`)!,
      {
        channel: "mem",
        sessionKey: "agent:main:mem:dm:owner",
        agentId: "main",
        chatScope: "mem:owner-chat",
        chatId: "owner-chat",
        sender: { id: "owner" },
        approver: { target: "mem:owner-chat" },
      },
      {
        ctx: h.daemon.ctx,
        host: h.daemon.parts.host!,
        choices: new AgentChoiceStore(h.daemon.ctx.db),
        approvals: approvals(),
      },
    );
    expect(reply).toBe(`Denied ${id}.`);
    expect(await decision).toBe("denied");
  });
});
