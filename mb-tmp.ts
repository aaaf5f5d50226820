// Replays a turn's SQLite work (the statements the daemon runs per /v1 turn) on a real WAL file.
import { openDatabase } from "./internal/store/db.js";
import { allMigrations } from "./internal/daemon/migrations.js";
import { SessionStore } from "./internal/session/session-store.js";
import { TraceRecorder, flushTraces } from "./internal/agent/trace.js";
import { UsageTracker } from "./internal/agent/usage/usage-tracker.js";
import { rmSync, statSync } from "node:fs";
const variant = process.argv[2] ?? "A"; // A: 3 commits, B: 2 commits
const ckpt = Number(process.argv[3] ?? 1000);
const dir = `/tmp/store-commits/mb-${variant}-${ckpt}`;
rmSync(dir, { recursive: true, force: true });
const db = openDatabase(dir, { migrations: allMigrations });
db.pragma(`wal_autocheckpoint = ${ckpt}`);
for (const extra of process.argv.slice(4)) db.exec(extra);
const st = new SessionStore(db);
const traces = new TraceRecorder(db, Date.now);
const usage = new UsageTracker({ db, config: () => ({ models: { pricing: {} } }) as never });
const keys = Array.from({ length: 100 }, (_, i) => `agent:main:gateway:load-${i}`);
const usageTx = db.transaction((rec: any, req: string) => { usage.record(rec); traces.point({ requestId: req, rootRequestId: req, depth: 0, kind: "model", name: "fake/x", meta: rec.usage }); traces.flush(); });
const bothTx = db.transaction((rec: any, req: string, f: () => number) => { usage.record(rec); traces.point({ requestId: req, rootRequestId: req, depth: 0, kind: "model", name: "fake/x", meta: rec.usage }); traces.flush(); return f(); });
const inboundTx = db.transaction((f: () => [any, number]) => f());
const u = { input: 20, output: 12, total: 32, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
const cpu = () => { const c = process.cpuUsage(); return c.user + c.system; };
const ph: Record<string, number> = {};
let pc = 0;
const mark = (k: string): void => { const c = cpu(); ph[k] = (ph[k] ?? 0) + c - pc; pc = c; };
const turn = (i: number): void => {
  pc = cpu();
  const key = keys[i % 100]!;
  const req = `req-${i}`;
  st.head(key); // model override
  mark("head");
  const [row] = inboundTx(() => { const h = st.head(key) ?? st.create(key, "main"); return [h, st.append(h.id, { role: "user", content: `turn ${i} about the weather and the garden`, requestId: req })]; });
  mark("inbound");
  st.get(row.id);
  mark("get");
  st.messages(row.id);
  mark("messages");
  traces.start({ requestId: req, parentRequestId: null, rootRequestId: req, depth: 0, kind: "turn", name: "main", sessionId: row.id, agentId: "main" });
  const rec = { sessionId: row.id, sessionKey: key, agentId: "main", provider: "fake", model: "x", requestId: req, usage: u, cost: null, channel: "api", payerAgent: "main", payerSession: key };
  const answer = () => st.append(row.id, { role: "assistant", content: `echo: turn ${i} about the weather and the garden`, model: "fake/x", finishReason: "stop", usage: u, requestId: req });
  mark("start");
  if (variant === "A") { usageTx(rec, req); mark("usage"); answer(); } else bothTx(rec, req, answer);
  mark("answer");
  traces.endRequest(req, "ok");
  mark("end");
};
const N = Number(process.env.N ?? 6000);
for (let i = 0; i < 500; i++) turn(i); // warm
for (const k in ph) ph[k] = 0;
const c0 = cpu(); const t0 = performance.now();
const lat: number[] = [];
for (let i = 500; i < 500 + N; i++) { const a = performance.now(); turn(i); lat.push(performance.now() - a); }
const c1 = cpu();
flushTraces(db);
console.log(Object.entries(ph).map(([k, v]) => `${k} ${(v / N).toFixed(1)}`).join(", "));
if (ckpt === 0) console.log("wal frames per turn", (statSync(`${dir}/familiar.db-wal`).size / 4120 / (N + 500)).toFixed(2));
lat.sort((a, b) => a - b);
console.log(variant, `ckpt=${ckpt}`, process.argv.slice(4).join(" "), `cpu/turn ${((c1 - c0) / N).toFixed(1)} us`, `wall p50 ${(lat[N >> 1]! * 1000).toFixed(0)} us p99 ${(lat[Math.floor(N * 0.99)]! * 1000).toFixed(0)} us max ${(lat[N - 1]! * 1000).toFixed(0)} us`);
