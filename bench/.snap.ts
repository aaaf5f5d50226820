import { readdirSync } from "node:fs";
import { chatTurn, pool } from "./lib/client.js";
import { startGatewaySetup } from "./lib/setup.js";
const dir = "/tmp/lean/snaps";
const s = await startGatewaySetup({ nodeFlags: ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`] });
const d = s.daemon;
let done = 0;
const drive = async (upto: number): Promise<void> => {
  await pool(upto - done, 10, async () => { const i = done++; await chatTurn(d.url, `rss-${i % 100}`, `message number ${i} about the weather and the garden`); });
};
const snap = async (): Promise<void> => {
  const before = readdirSync(dir).length;
  process.kill(d.pid, "SIGUSR2");
  for (let i = 0; i < 600 && readdirSync(dir).length === before; i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 3000));
};
await drive(1000); await snap();
await drive(Number(process.argv[2] ?? 6000)); await snap();
await s.close();
process.exit(0);
