/**
 * Writes every model request body of a scripted conversation, one JSON line each, so two builds can
 * be compared byte for byte (issue 26: per-turn work was cut without changing what the model gets).
 * The conversation: sequential turns with tool calls, messages queued behind a running turn (stored
 * before its reply), other sessions, then more turns. The clock in the context note is masked.
 *
 *   node --import tsx bench/request-dump.ts before.jsonl      # with FAMILIAR_BENCH_CLI=<other build>
 *   node --import tsx bench/request-dump.ts after.jsonl && cmp before.jsonl after.jsonl
 */
import { writeFileSync } from "node:fs";
import { chatTurn } from "./lib/client.js";
import { fakeModels, startBenchDaemon } from "./lib/daemon.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";

const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: request-dump <out.jsonl>\n");
  process.exit(2);
}
const fake = await startFakeOpenAI({});
const daemon = await startBenchDaemon({ config: { models: fakeModels(fake.baseUrl) } });
try {
  fake.setHandler((req) => {
    const msgs = req.body?.messages ?? [];
    const last = msgs[msgs.length - 1];
    const text = typeof last?.content === "string" ? last.content : "";
    if (last?.role !== "user") return undefined;
    if (text.includes("use the tool"))
      return { toolCalls: [{ id: `call_${text.length}`, name: "memory_search", arguments: { query: "x" } }] };
    if (text.includes("slow")) return { text: `slow answer to ${text}`, delayMs: 40 };
    return undefined;
  });
  const base = daemon.url;
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 40; i++)
    await chatTurn(base, "s1", i % 7 === 3 ? `please use the tool ${i}` : `message ${i}`);
  for (let round = 0; round < 4; round++) {
    const a = chatTurn(base, "s1", `slow first ${round}`);
    await sleep(60);
    const b = chatTurn(base, "s1", `queued second ${round}`);
    await sleep(30);
    const c = chatTurn(base, "s1", `queued third ${round}`);
    await Promise.all([a, b, c]);
  }
  for (let i = 0; i < 15; i++)
    await chatTurn(base, "s1", i % 5 === 2 ? `please use the tool again ${i}` : `after ${i}`);
  for (let i = 0; i < 5; i++) await chatTurn(base, `other-${i}`, `hello ${i}`);
  const lines = fake.requests.map((r) => JSON.stringify(r.body).replace(/Now: [^(]*\(/g, "Now: X ("));
  writeFileSync(out, lines.join("\n") + "\n");
  process.stdout.write(`${lines.length} requests written to ${out}\n`);
} finally {
  await daemon.stop();
  await fake.close();
}
