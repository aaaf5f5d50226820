// Builds the owner's console (console/src, Preact + uPlot) into dist/console/ (run by `npm run build`).
//
// Why esbuild and not a bigger toolchain: esbuild already builds the daemon, it bundles, minifies and
// hashes TSX in well under a second, and adds no dependency. The output is plain static files the
// gateway serves from disk when a browser asks (internal/gateway/console-route.ts); nothing of it is
// imported by the daemon, so the console costs the daemon neither start time nor idle memory.
//
// Output: index.html (served no-cache) and assets/<name>-<hash>.<ext> (served immutable), each asset
// also gzip-compressed beside it (<file>.gz) so the gateway can send it compressed without work.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "dist", "console");
const assets = join(outdir, "assets");
rmSync(outdir, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { console: "console/src/main.tsx" },
  outdir: assets,
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: ["chrome109", "firefox115", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((n) => n.endsWith(".js"));
const css = outputs.find((n) => n.endsWith(".css"));
if (!js || !css) throw new Error(`console build: expected one .js and one .css, got ${outputs.join(", ")}`);

const icon = readFileSync(join(root, "console", "favicon.svg"));
const iconName = `favicon-${createHash("sha256").update(icon).digest("hex").slice(0, 8)}.svg`;
writeFileSync(join(assets, iconName), icon);

const html = readFileSync(join(root, "console", "index.html"), "utf8")
  .replaceAll("%JS%", `assets/${js}`)
  .replaceAll("%CSS%", `assets/${css}`)
  .replaceAll("%ICON%", `assets/${iconName}`);
writeFileSync(join(outdir, "index.html"), html);

let total = 0;
for (const name of readdirSync(assets)) {
  const body = readFileSync(join(assets, name));
  const gz = gzipSync(body, { level: 9 });
  if (gz.length < body.length) writeFileSync(join(assets, name + ".gz"), gz);
  total += Math.min(gz.length, body.length);
}
console.log(`console: dist/console (${js}, ${css}; ${(total / 1024).toFixed(1)} KiB gzipped)`);
