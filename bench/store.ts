/**
 * Store: the two reads that grow with a user's history, on a real SQLite file in a temp dir with the
 * daemon's own modules and migrations (in-process, so the figure is the store's cost alone):
 * - loading the live context of a session of `storeMessages` messages (what a turn does before the
 *   model call: read the session's messages, order them by turn, turn them into chat messages);
 * - memory search (internal/memory/memory-index.ts) over `memoryNotes` notes in memory/*.md, plus the
 *   session's transcript: the first search (index build) and warm searches.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { orderByTurn, toChatMessages } from "../internal/agent/history.js";
import { MemoryIndex } from "../internal/memory/memory-index.js";
import { SessionStore } from "../internal/session/session-store.js";
import { sessionKeys } from "../internal/session/keys.js";
import { openDatabase } from "../internal/store/db.js";
import { allMigrations } from "../internal/daemon/migrations.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { summarize } from "./lib/stats.js";
import { roundSummary } from "./turn-overhead.js";

const WORDS =
  "garden tomato invoice dentist flight berlin python rust coffee bicycle tax meeting passport recipe sister birthday guitar lease insurance marathon".split(
    " ",
  );
const word = (i: number): string => WORDS[i % WORDS.length]!;

export async function storeBench(o: BenchOptions): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-store-"));
  const db = openDatabase(join(dir, "data"), { migrations: allMigrations });
  try {
    const store = new SessionStore(db);
    const session = store.create(sessionKeys.gateway("main", "long"), "main");
    let lastUser = 0;
    db.transaction(() => {
      for (let i = 0; i < o.storeMessages; i++) {
        const user = i % 2 === 0;
        const id = store.append(session.id, {
          role: user ? "user" : "assistant",
          content: user
            ? `Can you remind me about the ${word(i)} and the ${word(i * 7)} on day ${i}?`
            : `Sure. I noted the ${word(i)} for day ${i}; I will bring up the ${word(i * 3)} again tomorrow morning.`,
        });
        if (user) lastUser = id;
      }
    })();
    // Cold: a fresh SessionStore on a db whose cache never saw the session is not possible inside one
    // process (the cache is per db), so cold reads reopen the db; warm reads reuse it (as turns do).
    const cold: number[] = [];
    let count = 0;
    for (let r = 0; r < 5; r++) {
      const db2 = openDatabase(join(dir, "data"), { migrations: allMigrations });
      try {
        const t0 = performance.now();
        count = toChatMessages(orderByTurn(new SessionStore(db2).messages(session.id), lastUser)).length;
        cold.push(performance.now() - t0);
      } finally {
        db2.close();
      }
    }
    const load: number[] = [];
    for (let r = 0; r < 30; r++) {
      const t0 = performance.now();
      toChatMessages(orderByTurn(store.messages(session.id), lastUser));
      load.push(performance.now() - t0);
    }

    const ws = join(dir, "workspace");
    mkdirSync(join(ws, "memory"), { recursive: true });
    const perFile = 100;
    for (let f = 0; f * perFile < o.memoryNotes; f++) {
      const lines = [`# Notes ${f}`, ""];
      for (let k = 0; k < perFile && f * perFile + k < o.memoryNotes; k++) {
        const n = f * perFile + k;
        lines.push(
          `- Note ${n}: the ${word(n)} appointment moved; bring the ${word(n * 11)} papers (ref ${n}).`,
        );
      }
      writeFileSync(join(ws, "memory", `notes-${String(f).padStart(4, "0")}.md`), `${lines.join("\n")}\n`);
    }
    const index = new MemoryIndex(db, () => ws);
    const t0 = performance.now();
    const firstHits = (await index.search("dentist passport")).length;
    const first = performance.now() - t0;
    const warm: number[] = [];
    for (let q = 0; q < 50; q++) {
      const t = performance.now();
      await index.search(`${word(q)} ${word(q * 5 + 1)}`);
      warm.push(performance.now() - t);
    }
    const loadSum = summarize(load);
    const coldSum = summarize(cold);
    const warmSum = summarize(warm);
    return {
      name: "store",
      title: "Store (in-process, real SQLite file)",
      rows: [
        {
          metric: `load live context of a ${o.storeMessages}-message session, first read, ms`,
          value: `p50 ${coldSum.p50.toFixed(2)}, max ${coldSum.max.toFixed(2)} (${count} chat messages)`,
        },
        {
          metric: `load live context of a ${o.storeMessages}-message session, next turns, ms`,
          value: `p50 ${loadSum.p50.toFixed(2)}, max ${loadSum.max.toFixed(2)}`,
        },
        {
          metric: `memory search, first (indexes ${o.memoryNotes} notes + transcript), ms`,
          value: first.toFixed(1),
        },
        {
          metric: `memory search over ${o.memoryNotes} notes, warm, ms`,
          value: `p50 ${warmSum.p50.toFixed(2)}, p99 ${warmSum.p99.toFixed(2)}`,
        },
      ],
      data: {
        messages: o.storeMessages,
        notes: o.memoryNotes,
        loadContextFirstMs: roundSummary(coldSum),
        loadContextNextMs: roundSummary(loadSum),
        firstSearchMs: Math.round(first * 10) / 10,
        firstSearchHits: firstHits,
        warmSearchMs: roundSummary(warmSum),
      },
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
