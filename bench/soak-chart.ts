/**
 * Renders the soak benchmark's samples (JSON lines from FAMILIAR_SOAK_OUT) as an SVG chart: RSS and
 * V8 heap in MB over hours, with the database + WAL size. No dependencies: plain SVG text.
 *
 *   node --import tsx bench/soak-chart.ts <samples.jsonl> <out.svg>
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { SoakSample } from "../test/helpers/soak-driver.js";

const [, , input, output] = process.argv;
if (!input || !output) throw new Error("usage: soak-chart.ts <samples.jsonl> <out.svg>");
const samples = readFileSync(input, "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l) as SoakSample);
if (samples.length < 2) throw new Error(`${input}: expected at least 2 samples, got ${samples.length}`);

const W = 900;
const H = 420;
const L = 60;
const R = 20;
const T = 40;
const B = 50;
const hours = samples.at(-1)!.t / 3600;
const maxY =
  Math.ceil(Math.max(...samples.map((s) => Math.max(s.rssMB, s.heapUsedMB, s.dbMB + s.walMB))) / 25) * 25 +
  25;
const x = (t: number): number => L + ((W - L - R) * t) / 3600 / Math.max(hours, 1e-9);
const y = (mb: number): number => H - B - ((H - T - B) * mb) / maxY;
const path = (pick: (s: SoakSample) => number): string =>
  samples.map((s, i) => `${i ? "L" : "M"}${x(s.t).toFixed(1)},${y(pick(s)).toFixed(1)}`).join(" ");

const grid: string[] = [];
for (let mb = 0; mb <= maxY; mb += 25)
  grid.push(
    `<line x1="${L}" x2="${W - R}" y1="${y(mb)}" y2="${y(mb)}" stroke="#ddd"/><text x="${L - 8}" y="${y(mb) + 4}" text-anchor="end">${mb}</text>`,
  );
const step = hours > 4 ? 1 : hours > 1 ? 0.5 : 0.25;
for (let h = 0; h <= hours + 1e-9; h += step)
  grid.push(
    `<line y1="${T}" y2="${H - B}" x1="${x(h * 3600)}" x2="${x(h * 3600)}" stroke="#eee"/><text x="${x(h * 3600)}" y="${H - B + 18}" text-anchor="middle">${h}</text>`,
  );
const last = samples.at(-1)!;
const turns = samples.reduce((n, s) => n + s.turns, 0);
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${L}" y="22" font-size="14" font-weight="bold">Soak: ${hours.toFixed(2)} h of mixed load (${turns} gateway turns, Telegram, Discord, cron, heartbeat, reconnects)</text>
${grid.join("\n")}
<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">hours</text>
<text x="16" y="${(T + H - B) / 2}" transform="rotate(-90 16 ${(T + H - B) / 2})" text-anchor="middle">MB</text>
<path d="${path((s) => s.rssMB)}" fill="none" stroke="#c0392b" stroke-width="2"/>
<path d="${path((s) => s.heapUsedMB)}" fill="none" stroke="#2980b9" stroke-width="2"/>
<path d="${path((s) => s.dbMB + s.walMB)}" fill="none" stroke="#27ae60" stroke-width="1.5" stroke-dasharray="4 3"/>
<g transform="translate(${W - R - 250},${y(maxY * 0.62)})">
<rect width="245" height="62" fill="white" stroke="#ccc"/>
<line x1="8" x2="32" y1="14" y2="14" stroke="#c0392b" stroke-width="2"/><text x="38" y="18">RSS (end ${last.rssMB} MB)</text>
<line x1="8" x2="32" y1="32" y2="32" stroke="#2980b9" stroke-width="2"/><text x="38" y="36">V8 heap used (end ${last.heapUsedMB} MB)</text>
<line x1="8" x2="32" y1="50" y2="50" stroke="#27ae60" stroke-dasharray="4 3"/><text x="38" y="54">db + WAL (end ${(last.dbMB + last.walMB).toFixed(1)} MB)</text>
</g>
</svg>
`;
writeFileSync(output, svg);
process.stdout.write(`${output}: ${samples.length} samples over ${hours.toFixed(2)} h\n`);
