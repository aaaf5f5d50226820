/**
 * Fault injection, disk: the daemon's own SQLite store fills up (`PRAGMA max_page_count` on the live
 * connection, then the free space filled, so every write fails with SQLITE_FULL) or turns read-only
 * (`PRAGMA query_only`, SQLITE_READONLY). Invariants: the user gets one clear message naming the cause
 * (HTTP API, websocket, Telegram), the log says it too, no model call is made for a message that could
 * not be kept, and once space returns the daemon carries on with an intact database
 * (`PRAGMA integrity_check`).
 */
import Database from "better-sqlite3";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Daemon } from "../../internal/daemon/daemon.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { Db } from "../../internal/store/db.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import { freePort, waitFor } from "../gateway/harness.js";

const TOKEN = "disk-faults-token-0123456789";
const owner: FakeUser = { id: 4711, first_name: "Ann" };

let fake: FakeOpenAI;
let tg: FakeTelegramServer;
let daemon: Daemon;
let client: GatewayClient;
let dir: string;
let base: string;
const logLines: string[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
  tg = await startFakeTelegram();
  dir = mkdtempSync(join(tmpdir(), "familiar-disk-"));
  mkdirSync(join(dir, "workspace"), { recursive: true });
  const port = await freePort();
  const configPath = join(dir, "config.yaml");
  const config = {
    data_dir: join(dir, "data"),
    workspace: join(dir, "workspace"),
    timezone: "UTC",
    log: { level: "info", pretty: false },
    models: {
      providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
      primary: "fake/m",
      max_retries: 0,
      timeout_s: 10,
    },
    gateway: { bind: "127.0.0.1", port, token: TOKEN },
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "open",
        stream: { mode: "off" },
      },
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const sink = new PassThrough();
  sink.on("data", (c: Buffer) => logLines.push(...c.toString("utf8").split("\n").filter(Boolean)));
  daemon = await Daemon.start({ configPath, watchConfig: false, logDestination: sink, env: {} });
  base = `http://127.0.0.1:${port}`;
  client = await GatewayClient.connect({
    url: `ws://127.0.0.1:${port}/ws`,
    token: TOKEN,
    clientName: "disk",
  });
  await waitFor(() => daemon.channels.get("telegram")?.status().state === "connected", 15_000);
});
afterAll(async () => {
  await client?.close();
  await daemon?.stop("test");
  await tg?.close();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function db(): Db {
  return daemon.db;
}

/**
 * Caps the file at its current size and fills the free space of the messages table itself (filler rows
 * of shrinking size in a filler session), so appending any message fails with SQLITE_FULL.
 */
function fillDisk(): void {
  db().exec(
    "INSERT OR IGNORE INTO sessions (id, key, agent_id, created_at, updated_at) VALUES ('fault-filler', 'fault:filler', 'main', 0, 0)",
  );
  db().pragma(`max_page_count = ${db().pragma("page_count", { simple: true }) as number}`);
  const insert = db().prepare(
    "INSERT INTO messages (session_id, role, content, created_at) VALUES ('fault-filler', 'event', hex(randomblob(?)), 0)",
  );
  for (const size of [2000, 200, 20, 1]) {
    for (;;) {
      try {
        insert.run(size);
      } catch (err) {
        expect((err as { code?: string }).code).toBe("SQLITE_FULL");
        break;
      }
    }
  }
}

/** Space returns: the cap is lifted and the filler removed. */
function freeDisk(): void {
  db().pragma("max_page_count = 1073741823");
  db().exec("DELETE FROM messages WHERE session_id = 'fault-filler'");
  db().exec("DELETE FROM sessions WHERE id = 'fault-filler'");
}

async function ask(
  session: string,
  text: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${TOKEN}`,
      "x-familiar-session": session,
    },
    body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: text }] }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function answerOf(body: Record<string, unknown>): unknown {
  return (body.choices as { message: { content: unknown } }[] | undefined)?.[0]?.message.content;
}

async function storedUserTexts(session: string): Promise<string[]> {
  const h = await client.request<{ messages: { role: string; content: string }[] }>("chat.history", {
    sessionKey: session,
  });
  return h.messages.filter((m) => m.role === "user").map((m) => m.content);
}

function integrity(): string {
  return db().pragma("integrity_check", { simple: true }) as string;
}

describe("the store's disk full or read-only", () => {
  it("disk full: one clear error everywhere, no model call, and the daemon carries on once space returns", async () => {
    expect(answerOf((await ask("disk", "before")).body)).toBe("echo: before");
    fillDisk();
    const calls = fake.requests.length;
    try {
      // HTTP API: a 503 with the cause.
      const r = await ask("disk", "while full");
      expect(r.status).toBe(503);
      const err = r.body.error as { message: string; code: string };
      expect(err.code).toBe("store_full");
      expect(err.message).toMatch(/disk holding my database is full/);

      // Websocket: the turn result carries the code and the same text.
      const w = await client.request<{
        result: { finishReason: string; text: string; error: { code: string } };
      }>("chat.send", { sessionKey: "disk-ws", message: "while full", wait: true });
      expect(w.result).toMatchObject({ finishReason: "error", error: { code: "STORE_FULL" } });
      expect(w.result.text).toMatch(/disk holding my database is full/);

      // Telegram: the user is told, once.
      tg.pushText(owner, "hello while the disk is full");
      await tg.waitFor(() => tg.visible(owner.id).length > 0, 15_000, "a Telegram reply");
      await new Promise((res) => setTimeout(res, 300));
      const replies = tg.visible(owner.id).map((m) => m.text);
      expect(replies, JSON.stringify(replies)).toHaveLength(1);
      expect(replies[0]).toMatch(/disk holding my database is full/);

      expect(fake.requests.length, "no model call for a message that could not be stored").toBe(calls);
      const logged = logLines.filter((l) => l.includes("STORE_FULL"));
      expect(logged.length).toBeGreaterThanOrEqual(3);
      expect(logged[0]).toMatch(/"level":"error"/);
      expect(logged[0]).toMatch(/could not store an incoming message: the disk holding the database is full/);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      freeDisk();
    }
    expect(integrity()).toBe("ok");
    expect(answerOf((await ask("disk", "after")).body)).toBe("echo: after");
    expect(await storedUserTexts("disk")).toEqual(["before", "after"]);
    tg.pushText(owner, "and now?");
    await tg.waitFor(
      () => tg.visible(owner.id).some((m) => m.text === "echo: and now?"),
      15_000,
      "answer after",
    );
  });

  it("disk full in the middle of a turn: the streamed turn ends with one clear error", async () => {
    fake.enqueue({ text: "a long answer ".repeat(40), chunkSize: 40, delayMs: 40 });
    const events: { state: string; text?: string; error?: { code: string } }[] = [];
    client.on("chat", (p) => events.push(p as { state: string }));
    const sent = await client.request<{ runId: string }>("chat.send", {
      sessionKey: "mid",
      message: "go on",
    });
    await waitFor(() => events.some((e) => e.state === "delta") || undefined, 15_000);
    fillDisk();
    try {
      const end = await waitFor(
        () =>
          events.find(
            (e) =>
              ["final", "error", "aborted"].includes(e.state) &&
              (e as { runId?: string }).runId === sent.runId,
          ),
        15_000,
      );
      expect(end.state).toBe("error");
      expect(JSON.stringify(end)).toMatch(/disk holding my database is full/);
      expect(events.filter((e) => ["final", "error", "aborted"].includes(e.state))).toHaveLength(1);
    } finally {
      freeDisk();
    }
    expect(integrity()).toBe("ok");
    expect(answerOf((await ask("mid-after", "fine again")).body)).toBe("echo: fine again");
  });

  it("read-only store: a clear error, then normal service once it is writable again", async () => {
    db().pragma("query_only = 1");
    try {
      const r = await ask("ro", "while read-only");
      expect(r.status).toBe(503);
      const err = r.body.error as { message: string; code: string };
      expect(err.code).toBe("store_readonly");
      expect(err.message).toMatch(/database cannot be written/);
      expect(logLines.some((l) => l.includes("STORE_READONLY") && l.includes('"level":"error"'))).toBe(true);
    } finally {
      db().pragma("query_only = 0");
    }
    expect(answerOf((await ask("ro", "writable")).body)).toBe("echo: writable");
    expect(await storedUserTexts("ro")).toEqual(["writable"]);
  });

  it("the database file is intact after the daemon stops", async () => {
    await client.close();
    await daemon.stop("test");
    const file = new Database(join(dir, "data", "familiar.db"), { readonly: true });
    try {
      expect(file.pragma("integrity_check", { simple: true })).toBe("ok");
      const n = file.prepare("SELECT COUNT(*) AS n FROM messages WHERE role = 'user'").get() as { n: number };
      expect(n.n).toBeGreaterThan(3);
    } finally {
      file.close();
    }
  });
});
