/**
 * Summarises a V8 `.cpuprofile` (from `npm run bench -- --cpu-prof DIR`) by self time: top functions
 * and totals per package or source file, so a hot spot is visible without a GUI.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [topN]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Package name (node_modules/<pkg>) or repo-relative file of a script URL. */
function bucketOf(url: string): string {
  if (!url) return "(native/idle/gc)";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `pkg:${nm[1]}`;
  if (url.startsWith("node:")) return url;
  const i = url.indexOf("/dist/");
  return i >= 0 ? url.slice(i + 1) : url.replace(/^file:\/\//, "");
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: profile-summary <file.cpuprofile> [topN]\n");
  process.exit(2);
}
const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const bucket = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const key = `${n.callFrame.functionName || "(anonymous)"} ${bucketOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + us);
  const b = bucketOf(n.callFrame.url);
  bucket.set(b, (bucket.get(b) ?? 0) + us);
}
const top = Number(topArg ?? 25);
const show = (title: string, m: Map<string, number>): void => {
  process.stdout.write(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)\n`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(
      `${(us / 1000).toFixed(1).padStart(9)} ms ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}\n`,
    );
};
show("self time by package / file", bucket);
show("self time by function", fn);
