/**
 * Telegram through the real daemon as a user runs it: a `familiar run` child process against the fake
 * Bot API and the fake model. Pairing is approved with the real `familiar pairing approve` CLI while
 * the daemon runs; /healthz shows the channel; a restart neither replays nor skips updates.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "./fakes/telegram-server.js";
import { childEnv, cleanupDaemons, cliCommand, startDaemonProcess } from "./helpers/daemon.js";
import { PAIRING_WELCOME } from "../internal/channels/common/pairing-welcome.js";
import { GatewayClient } from "../internal/gateway/client.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
const stranger: FakeUser = { id: 5151, first_name: "Cleo" };

beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram();
});
afterAll(async () => {
  await tg.close();
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
});

function cli(args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  const [cmd, ...pre] = cliCommand();
  const child = spawn(cmd!, [...pre, ...args], { cwd, env: childEnv() });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  return new Promise((res) => child.on("close", (code) => res({ code, out })));
}

const texts = (chatId: number): string[] => tg.visible(chatId).map((m) => m.text);

/** A daemon config: the fake model, and Telegram against the fake Bot API with `telegram` on top. */
const daemonConfig = (telegram: Record<string, unknown>): Record<string, unknown> => ({
  models: {
    providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
    primary: "fake/m",
    max_retries: 0,
  },
  channels: { telegram: { enabled: true, token: tg.token, api_root: tg.apiRoot, ...telegram } },
});

describe("telegram in the running daemon", () => {
  it("pairs a stranger with the CLI, answers, and survives a restart without replays", async () => {
    const config = daemonConfig({ dm_policy: "pairing" });
    const d = await startDaemonProcess({ config });
    // /healthz shows the channel; it reaches "connected" once getMe and the first poll went out.
    let state = "";
    for (let i = 0; i < 300 && state !== "connected"; i++) {
      const health = (await (await fetch(`${d.url}/healthz`)).json()) as {
        channels: Record<string, { state: string }>;
      };
      state = health.channels.telegram?.state ?? "";
      if (state !== "connected") await new Promise((r) => setTimeout(r, 50));
    }
    expect(state).toBe("connected");

    tg.pushText(stranger, "hello?");
    await tg.waitFor(() => texts(stranger.id).length === 1, 15_000, "pairing reply");
    const code = /familiar pairing approve ([A-Z2-9]{8})/.exec(texts(stranger.id)[0] ?? "")?.[1];
    expect(code).toBeDefined();
    expect(llm.requests).toHaveLength(0);

    const approve = await cli(["pairing", "approve", code!, "--config", d.configPath], d.dir);
    expect(approve.out).toContain(String(stranger.id));
    expect(approve.code).toBe(0);
    // The running daemon finds the CLI's approval and tells the stranger, once.
    await tg.waitFor(() => texts(stranger.id).includes(PAIRING_WELCOME), 15_000, "the welcome");

    llm.enqueue({ text: "Hi Cleo, welcome." });
    tg.pushText(stranger, "now?");
    await tg.waitFor(() => texts(stranger.id).includes("Hi Cleo, welcome."), 15_000, "answer");
    expect((await d.stop("SIGTERM")).code).toBe(0);

    // Restart on the same data dir: the update above is not replayed; a new one is answered once.
    const d2 = await startDaemonProcess({ config, dir: d.dir, port: d.port });
    llm.enqueue({ text: "Second answer." });
    tg.pushText(stranger, "again");
    await tg.waitFor(() => texts(stranger.id).includes("Second answer."), 15_000, "second answer");
    expect(texts(stranger.id).filter((t) => t === "Hi Cleo, welcome.")).toHaveLength(1);
    expect(texts(stranger.id).filter((t) => t === "Second answer.")).toHaveLength(1);
    expect(texts(stranger.id).filter((t) => t === PAIRING_WELCOME)).toHaveLength(1);
    expect(llm.requests).toHaveLength(2);
    await d2.stop("SIGTERM");
  });

  it("a stranger approved from the console (the gateway's pairing.approve) is told at once", async () => {
    const d = await startDaemonProcess({ config: daemonConfig({ dm_policy: "pairing" }) });
    const guest: FakeUser = { id: 6161, first_name: "Dora" };
    const asked = llm.requests.length;
    tg.pushText(guest, "may I?");
    await tg.waitFor(() => texts(guest.id).length === 1, 30_000, "pairing reply");
    const code = /familiar pairing approve ([A-Z2-9]{8})/.exec(texts(guest.id)[0] ?? "")?.[1];
    const owner = await GatewayClient.connect({
      url: d.url.replace(/^http/, "ws") + "/ws",
      token: d.token(),
      clientName: "console",
      role: "owner",
    });
    try {
      const r = await owner.request<{ approved: { userId: string } }>("pairing.approve", {
        channel: "telegram",
        code,
      });
      expect(r.approved.userId).toBe(String(guest.id));
      await tg.waitFor(() => texts(guest.id).includes(PAIRING_WELCOME), 15_000, "the welcome");
      expect(texts(guest.id)).toEqual([texts(guest.id)[0], PAIRING_WELCOME]);
      expect(llm.requests).toHaveLength(asked);
    } finally {
      await owner.close();
    }
  }, 60_000);

  it("an answer stored but not delivered when the daemon was killed is sent after the restart, once", async () => {
    const owner: FakeUser = { id: 6363, first_name: "Eve" };
    const config = daemonConfig({ dm_policy: "allowlist", allow_from: [owner.id], stream: { mode: "off" } });
    const d = await startDaemonProcess({ config });
    llm.enqueue({ text: "The answer that must not be lost." });
    // Telegram never confirms the reply: the daemon dies while it waits.
    tg.failNext("sendMessage", { status: 0, hang: true });
    tg.pushText(owner, "what is the answer?");
    await tg.waitFor(() => tg.callsOf("sendMessage").some((c) => c.status === 0), 20_000, "the held send");
    const db = new Database(join(d.dataDir, "familiar.db"), { readonly: true });
    try {
      const stored = db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM messages WHERE role = 'assistant' AND content = ?",
      );
      expect(stored.get("The answer that must not be lost.")?.n).toBe(1);
      expect(db.prepare("SELECT COUNT(*) AS n FROM chat_deliveries").get()).toEqual({ n: 1 });
    } finally {
      db.close();
    }
    await d.kill9();
    expect(texts(owner.id)).toEqual([]);

    const calls = llm.requests.length;
    const d2 = await startDaemonProcess({ config, dir: d.dir, port: d.port });
    await tg.waitFor(
      () => texts(owner.id).includes("The answer that must not be lost."),
      20_000,
      "the stored answer",
    );
    // Sent once, without asking the model again; the record is cleared.
    expect(texts(owner.id)).toEqual(["The answer that must not be lost."]);
    expect(llm.requests.length).toBe(calls);
    await d2.stop("SIGTERM");
    const after = new Database(join(d.dataDir, "familiar.db"), { readonly: true });
    try {
      expect(after.prepare("SELECT COUNT(*) AS n FROM chat_deliveries").get()).toEqual({ n: 0 });
    } finally {
      after.close();
    }
  }, 90_000);

  it("removes a streaming preview left by kill -9 mid-stream; the resumed answer arrives once", async () => {
    const owner: FakeUser = { id: 6262, first_name: "Dee" };
    const config = daemonConfig({
      dm_policy: "allowlist",
      allow_from: [owner.id],
      stream: { edit_interval_ms: 200 },
    });
    const d = await startDaemonProcess({ config });
    llm.enqueue({ hang: true, text: "Partial thoughts that the crash will cut short" });
    tg.pushText(owner, "a long question");
    await tg.waitFor(() => texts(owner.id).some((t) => t.includes("Partial thoughts")), 20_000, "preview");
    // The daemon records the preview once Telegram answered with its id: crash after that.
    const db = new Database(join(d.dataDir, "familiar.db"), { readonly: true });
    try {
      const count = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM chat_previews");
      const recorded = (): boolean => count.get()?.n === 1;
      for (let i = 0; i < 200 && !recorded(); i++) await new Promise((r) => setTimeout(r, 25));
      expect(recorded()).toBe(true);
    } finally {
      db.close();
    }
    await d.kill9();

    llm.enqueue({ text: "The complete answer." });
    const d2 = await startDaemonProcess({ config, dir: d.dir, port: d.port });
    await tg.waitFor(
      () => texts(owner.id).includes("The complete answer.") && texts(owner.id).length === 1,
      20_000,
      "the resumed answer alone",
    );
    // The preview was deleted on the platform, not just hidden.
    const preview = tg.messages.find((m) => m.chatId === String(owner.id) && m.text.includes("Partial"));
    expect(preview?.deleted).toBe(true);
    expect(tg.callsOf("deleteMessage").filter((c) => Number(c.params.chat_id) === owner.id)).toHaveLength(1);
    await d2.stop("SIGTERM");
  }, 90_000);
});
