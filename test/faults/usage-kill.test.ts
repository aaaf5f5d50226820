/**
 * Fault injection, process: what a kill -9 leaves of the bill. The real daemon (a child process) runs
 * 30 concurrent websocket turns against a slow streaming model (half of them call a tool first, so a
 * turn makes two model calls), is killed with SIGKILL once some answers went out, and is restarted on
 * the same data dir. Invariants checked (docs/architecture.md, "What each commit makes durable"):
 * - a model call's usage row and its answer are one commit: per request, exactly as many usage rows as
 *   stored assistant messages, after the kill and after the restart (never an answer without its cost,
 *   never a cost without its answer);
 * - every answer delivered before the kill is stored with its usage row (a bill is never a surprise:
 *   the budgets read these rows);
 * - after the restart the interrupted turns are answered exactly once, and the usage the store holds
 *   is what the delivered answers reported.
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { lastUserOf as lastUser, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
import { waitFor } from "../gateway/harness.js";

const TOKEN = "usage-kill-token-0123456789";
const TURNS = 30;
const KEY = (i: number): string => `agent:main:gateway:u${i}`;

let fake: FakeOpenAI | undefined;
afterAll(async () => {
  await cleanupDaemons();
  await fake?.close();
});

async function connect(d: DaemonProcess, events: ChatEventPayload[]): Promise<GatewayClient> {
  const c = await GatewayClient.connect({
    url: `ws://127.0.0.1:${d.port}/ws`,
    token: TOKEN,
    clientName: "usage",
  });
  c.on("chat", (p) => events.push(p as ChatEventPayload));
  return c;
}

interface Tally {
  /** request id -> [usage rows, assistant messages] */
  perRequest: Map<string, [number, number]>;
  /** session key -> usage rows (input, output) and final answers */
  bySession: Map<string, { usage: { input: number; output: number }[]; answers: string[] }>;
}

/** Reads the store as it is on disk (a second connection, as the CLI would). */
function tally(dataDir: string): Tally {
  const db = new Database(join(dataDir, "familiar.db"), { readonly: true });
  try {
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    const perRequest = new Map<string, [number, number]>();
    for (const r of db
      .prepare<[], { rid: string }>("SELECT request_id AS rid FROM usage WHERE request_id IS NOT NULL")
      .all()) {
      const t = perRequest.get(r.rid) ?? [0, 0];
      t[0]++;
      perRequest.set(r.rid, t);
    }
    for (const r of db
      .prepare<[], { rid: string }>(
        "SELECT request_id AS rid FROM messages WHERE role = 'assistant' AND request_id IS NOT NULL",
      )
      .all()) {
      const t = perRequest.get(r.rid) ?? [0, 0];
      t[1]++;
      perRequest.set(r.rid, t);
    }
    const bySession: Tally["bySession"] = new Map();
    const entry = (k: string): { usage: { input: number; output: number }[]; answers: string[] } => {
      let e = bySession.get(k);
      if (!e) bySession.set(k, (e = { usage: [], answers: [] }));
      return e;
    };
    for (const r of db
      .prepare<[], { k: string; input: number; output: number }>(
        "SELECT session_key AS k, input, output FROM usage ORDER BY id",
      )
      .all())
      entry(r.k).usage.push({ input: r.input, output: r.output });
    for (const r of db
      .prepare<[], { k: string; content: string }>(
        `SELECT s.key AS k, m.content AS content FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.role = 'assistant' AND m.tool_calls IS NULL ORDER BY m.id`,
      )
      .all())
      entry(r.k).answers.push(r.content);
    return { perRequest, bySession };
  } finally {
    db.close();
  }
}

function expectUsageWithEveryAnswer(t: Tally): void {
  expect(t.perRequest.size).toBeGreaterThan(0);
  for (const [rid, [usageRows, answers]] of t.perRequest)
    expect({ rid, usageRows }).toEqual({ rid, usageRows: answers });
}

describe("kill -9 among concurrent turns: usage and answers", () => {
  it("never keeps an answer without its usage row or a usage row without its answer, across the kill and restart", async () => {
    const llm = await startFakeOpenAI();
    fake = llm;
    let delayMs = 60;
    llm.setHandler((req) => {
      const text = lastUser(req);
      const tools = (req.body?.messages ?? []).some((m) => m?.role === "tool");
      // Odd turns ask for the time first: two model calls, two usage rows, two assistant messages.
      if (/[13579]$/.test(text) && !tools) return { toolCalls: [{ name: "current_time", arguments: {} }] };
      return { text: `echo: ${text}`, chunkSize: 4, delayMs };
    });
    const config = {
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
        primary: "fake/slow",
        max_retries: 0,
        timeout_s: 60,
      },
      agents: { max_concurrent: 10 },
      gateway: { token: TOKEN },
    };
    const first = await startDaemonProcess({ config });
    const events: ChatEventPayload[] = [];
    const c1 = await connect(first, events);
    const acked = new Set<number>();
    await Promise.all(
      Array.from({ length: TURNS }, (_, i) =>
        c1
          .request<{ status: string }>("chat.send", { sessionKey: `u${i}`, message: `turn ${i}` })
          .then((r) => {
            if (r.status === "started") acked.add(i);
          }),
      ),
    );
    expect(acked.size).toBe(TURNS);
    // Killed right after some answers went out, while others stream or wait in the queue.
    await waitFor(() => events.filter((e) => e.state === "final").length >= 6, 30_000);
    expect((await first.kill9()).signal).toBe("SIGKILL");
    await c1.close().catch(() => undefined);
    const delivered = events.flatMap((e) => (e.state === "final" ? [e] : []));
    expect(delivered.length).toBeLessThan(TURNS);

    const dead = tally(first.dataDir);
    expectUsageWithEveryAnswer(dead);
    // Every delivered answer is stored with the usage it reported (summed over the turn's calls).
    for (const f of delivered) {
      const s = dead.bySession.get(f.sessionKey);
      expect(s?.answers).toEqual([f.text]);
      const sum = (s?.usage ?? []).reduce(
        (a, u) => ({ input: a.input + u.input, output: a.output + u.output }),
        {
          input: 0,
          output: 0,
        },
      );
      expect(sum).toEqual({ input: f.usage.input, output: f.usage.output });
    }

    // Restart: the interrupted turns are answered, each once, each answer with its usage.
    delayMs = 0;
    const second = await startDaemonProcess({ dir: first.dir, port: first.port, config });
    try {
      await waitFor(() => {
        const t = tally(second.dataDir);
        return [...acked].every((i) => (t.bySession.get(KEY(i))?.answers.length ?? 0) >= 1);
      }, 30_000);
      const after = tally(second.dataDir);
      expectUsageWithEveryAnswer(after);
      for (const i of acked) {
        const s = after.bySession.get(KEY(i));
        expect(s?.answers).toEqual([`echo: turn ${i}`]);
        // At least the tool-call step and the answer (a step cut by the kill is asked again).
        expect(s?.usage.length).toBeGreaterThanOrEqual(i % 2 === 1 ? 2 : 1);
      }
    } finally {
      await second.stop();
    }
  }, 120_000);
});
