/**
 * Approvals asked on the gateway: a turn started by a websocket client (the web chat) that needs the
 * owner's approval sends `approval.request` to that connection, and `approval.opened` to the other
 * web chats (another device); the asking connection (or the owner) settles it with
 * `approvals.resolve`, another chat client only with the hash of the question it showed. After a
 * reload the page finds the open question again (`approvals.list` of its session); an answer from one
 * device closes the card on the other (`approval.closed`). A turn whose client is gone before the
 * question went out is denied at once instead of waiting for the timeout. A real daemon, the fake
 * model asking for `write_file .envrc` (which asks even inside the sandbox).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "ws-approvals-token-0123456789";
let h: GatewayHarness;
const clients: GatewayClient[] = [];

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
});
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  h.fake.reset();
});

interface Question {
  id: string;
  text: string;
  hash?: string;
  sessionKey?: string;
}

interface Watched {
  client: GatewayClient;
  approvals: Question[];
  /** `approval.opened`: questions asked on another connection. */
  opened: Question[];
  closed: { id: string; decision: string }[];
  chat: ChatEventPayload[];
}

async function connect(name: string, role?: "owner"): Promise<Watched> {
  const client = await GatewayClient.connect({
    url: h.wsUrl,
    token: TOKEN,
    clientName: name,
    ...(role ? { role } : {}),
  });
  clients.push(client);
  const w: Watched = { client, approvals: [], opened: [], closed: [], chat: [] };
  client.on("approval.request", (p) => w.approvals.push(p as Question));
  client.on("approval.opened", (p) => w.opened.push(p as Question));
  client.on("approval.closed", (p) => w.closed.push(p as { id: string; decision: string }));
  client.on("chat", (p) => w.chat.push(p as ChatEventPayload));
  return w;
}

/** The model asks to write `.envrc`, then answers with the tool result it got. */
function scriptEnvrc(content: string): void {
  h.fake.enqueue(
    { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content } }] },
    { text: "done" },
  );
}

const envrc = (): string => join(h.dir, "workspace", "desk", ".envrc");
const finalOf = (w: Watched, runId: string) => () =>
  w.chat.find((e) => e.runId === runId && ["final", "error", "aborted"].includes(e.state));
const toolResults = (): string[] =>
  h.fake.requests.flatMap((r) =>
    (r.body?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content)),
  );

describe("approvals asked on the gateway", () => {
  it("go to the connection that started the turn, which approves; another chat client needs the hash", async () => {
    const web = await connect("web-chat");
    const other = await connect("other-chat");
    scriptEnvrc("export A=1\n");
    const r = await web.client.request<{ runId: string }>("chat.send", {
      sessionKey: "approve-me",
      message: "write my .envrc",
    });
    const asked = await waitFor(() => web.approvals[0]);
    expect(asked.text).toContain("write_file desk/.envrc");
    expect(asked.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(other.approvals).toEqual([]);

    // Not the connection that was asked, and no hash of what it showed: refused, still pending.
    await expect(
      other.client.request("approvals.resolve", { id: asked.id, decision: "approve" }),
    ).rejects.toThrow(/asked on another connection/);
    expect(existsSync(envrc())).toBe(false);

    expect(await web.client.request("approvals.resolve", { id: asked.id, decision: "approve" })).toEqual({
      id: asked.id,
      decision: "approved",
    });
    expect((await waitFor(finalOf(web, r.runId))).state).toBe("final");
    expect(readFileSync(envrc(), "utf8")).toBe("export A=1\n");
  });

  it("survives a reload and shows on another device; an answer with another hash settles nothing", async () => {
    const page = await connect("webchat");
    const phone = await connect("webchat");
    scriptEnvrc("export R=1\n");
    const r = await page.client.request<{ runId: string; sessionKey: string }>("chat.send", {
      sessionKey: "reload-me",
      message: "write my .envrc",
    });
    const asked = await waitFor(() => page.approvals[0]);
    expect(asked.sessionKey).toBe(r.sessionKey);
    // The phone shows the same question in that session, with the hash its Approve carries.
    const seen = await waitFor(() => phone.opened.find((q) => q.id === asked.id));
    expect(seen).toEqual(asked);
    // The turn said it waits for the owner (chats stop "typing…" on this notice).
    expect(
      phone.chat.some((e) => e.runId === r.runId && e.state === "notice" && e.kind === "approval_wait"),
    ).toBe(true);

    // The page reloads: a new connection finds the question of its session, and nothing of another's.
    await page.client.close();
    const reloaded = await connect("webchat");
    const { approvals: listed } = await reloaded.client.request<{
      approvals: { id: string; payloadHash: string; text: string }[];
    }>("approvals.list", { sessionKey: r.sessionKey });
    expect(listed.map((a) => a.id)).toEqual([asked.id]);
    expect(listed[0]!.payloadHash).toBe(asked.hash);
    expect(listed[0]!.text).toContain("write_file desk/.envrc");
    expect(
      await reloaded.client.request("approvals.list", { sessionKey: "agent:main:gateway:elsewhere" }),
    ).toEqual({ approvals: [] });

    // An answer carrying the hash of another payload settles nothing.
    await expect(
      reloaded.client.request("approvals.resolve", {
        id: asked.id,
        decision: "approve",
        hash: "0".repeat(64),
      }),
    ).rejects.toMatchObject({ code: "conflict" });
    expect(existsSync(envrc()) ? readFileSync(envrc(), "utf8") : "").not.toBe("export R=1\n");

    // The reloaded page answers with the hash it showed; the phone's card closes.
    expect(
      await reloaded.client.request("approvals.resolve", {
        id: asked.id,
        decision: "approve",
        hash: listed[0]!.payloadHash,
      }),
    ).toEqual({ id: asked.id, decision: "approved" });
    expect(await waitFor(() => phone.closed.find((c) => c.id === asked.id))).toMatchObject({
      decision: "approved",
    });
    expect((await waitFor(finalOf(phone, r.runId))).state).toBe("final");
    expect(readFileSync(envrc(), "utf8")).toBe("export R=1\n");
    expect(
      phone.chat.some((e) => e.runId === r.runId && e.state === "notice" && e.kind === "approval_answered"),
    ).toBe(true);
  });

  it("a deny from the connection reaches the model and writes nothing", async () => {
    const web = await connect("web-chat-2");
    scriptEnvrc("export B=2\n");
    const before = existsSync(envrc()) ? readFileSync(envrc(), "utf8") : "";
    const r = await web.client.request<{ runId: string }>("chat.send", {
      sessionKey: "deny-me",
      message: "write it again",
    });
    const asked = await waitFor(() => web.approvals[0]);
    await web.client.request("approvals.resolve", { id: asked.id, decision: "deny" });
    await waitFor(finalOf(web, r.runId));
    expect(existsSync(envrc()) ? readFileSync(envrc(), "utf8") : "").toBe(before);
    expect(toolResults().some((t) => /denied/i.test(t))).toBe(true);
  });

  it("when the asking client has gone, the request is denied at once, not after the timeout", async () => {
    const web = await connect("web-chat-3");
    // The tool call streams slowly (paced parts), so the client is gone before it is complete.
    h.fake.enqueue(
      {
        toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "gone\n" } }],
        chunkSize: 4,
        delayMs: 100,
      },
      { text: "gave up" },
    );
    await web.client.request("chat.send", { sessionKey: "gone", message: "write it" });
    await waitFor(() => h.fake.requests.length >= 1);
    await web.client.close();
    // Denied at once (the approval timeout is 300 s, far beyond waitFor's 15 s), and the model told.
    const result = await waitFor(() => toolResults().find((t) => /denied/.test(t)));
    expect(result).toContain("denied writing desk/.envrc");
    expect(h.logs().some((l) => /gateway:conn:\d+.*approval request not delivered/.test(l))).toBe(true);
    await waitFor(() => h.fake.requests.length >= 2);
    expect(web.approvals).toEqual([]);
    expect(existsSync(envrc()) ? readFileSync(envrc(), "utf8") : "").not.toBe("gone\n");
  });
});
