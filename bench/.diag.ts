import { readFileSync } from "node:fs";
import { authHeaders, chatTurn, pool } from "./lib/client.js";
import { startGatewaySetup } from "./lib/setup.js";
const s = await startGatewaySetup({ nodeFlags: [] });
const d = s.daemon;
const metrics = async (): Promise<string> => {
  const t = await (await fetch(`${d.url}/metrics`, { headers: authHeaders(d.url) })).text();
  return t
    .split("\n")
    .filter((l) => /^(nodejs_heap_size|nodejs_external|process_resident)/.test(l))
    .join(" | ");
};
const maps = (): string => {
  const txt = readFileSync(`/proc/${d.pid}/smaps`, "utf8");
  const out: { name: string; rss: number; anon: number }[] = [];
  let cur: { name: string; rss: number; anon: number } | undefined;
  for (const line of txt.split("\n")) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      cur = { name: m[1] || "[anon]", rss: 0, anon: 0 };
      out.push(cur);
      continue;
    }
    const r = /^(Rss|Anonymous):\s+(\d+)/.exec(line);
    if (r && cur) {
      if (r[1] === "Rss") cur.rss += Number(r[2]);
      else cur.anon += Number(r[2]);
    }
  }
  const agg = new Map<string, number>();
  for (const o of out) if (o.anon > 0) agg.set(o.name, (agg.get(o.name) ?? 0) + o.anon);
  const big = out
    .filter((o) => o.anon > 1024)
    .map((o) => `${o.name}:${(o.anon / 1024).toFixed(1)}`)
    .join(" ");
  return `${[...agg].map(([k, v]) => `${k}=${(v / 1024).toFixed(1)}MB`).join(" ")} || big: ${big}`;
};
await new Promise((r) => setTimeout(r, 10000));
console.log("idle10", d.anonMB().toFixed(1), await metrics());
console.log(maps());
let next = 0;
await pool(3000, 100, async () => {
  const i = next++;
  await chatTurn(d.url, `load-${i % 100}`, `turn ${i} about the weather`);
});
console.log("end", d.anonMB().toFixed(1), await metrics());
console.log(maps());
await new Promise((r) => setTimeout(r, 30000));
console.log("settled", d.anonMB().toFixed(1), await metrics());
console.log(maps());
await s.close();
process.exit(0);
