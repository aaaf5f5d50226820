// Bundles the CLI into dist/bundle/ (run by `npm run build` after tsc).
//
// Why: a cold start of the unbundled build spends most of its CPU in Node's module loader
// (resolving, reading and compiling ~130 of our files plus several hundred of zod, yaml, pino,
// commander ...). One ESM bundle with code splitting loads a handful of files instead; the
// `import()`s that keep channel libraries (grammy, discord.js), the MCP SDK and the like out of a
// start stay lazy because each becomes its own chunk.
//
// Invariants: better-sqlite3 (and koffi, loaded on the first malloc trim) stay external (native addon, found in node_modules at run time);
// modules that look for files beside themselves (web chat page, bundled skills, package.json) walk
// up to the package root, so they work from dist/bundle/ as well as from dist/ and the sources.
import { build } from "esbuild";
import { builtinsWithoutNamespace } from "./bundle-builtins.mjs";
import { keepLibraryNames } from "./bundle-keep-names.mjs";
import { zodEnglishOnly } from "./bundle-zod-locales.mjs";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "dist", "bundle");
rmSync(outdir, { recursive: true, force: true });

// The bin starts as a sh script that applies the daemon's runtime settings and execs Node on the same
// file (cmd/launcher.sh says how one file is both); a `*/` inside it would end the comment early.
const launcher = readFileSync(join(root, "cmd", "launcher.sh"), "utf8");
if (!launcher.startsWith("#!/bin/sh\n") || launcher.indexOf("*/") !== launcher.length - 3)
  throw new Error("cmd/launcher.sh: expected #!/bin/sh first and its only */ at the very end");

await build({
  absWorkingDir: root,
  entryPoints: { familiar: "cmd/familiar.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  // sqlite-vec finds its prebuilt extension (sqlite-vec-<os>-<arch>) beside itself in node_modules.
  external: ["better-sqlite3", "sqlite-vec", "koffi"],
  // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
  banner: {
    js: 'import { createRequire as __familiarRequire } from "node:module";\nconst require = __familiarRequire(import.meta.url);',
  },
  // tr46 (under grammY's node-fetch) calls require("punycode"), Node's deprecated built-in, which
  // printed a DEP0040 warning into the daemon's log when Telegram started: the same code from npm's
  // `punycode` package (a build dependency) is bundled instead.
  alias: { punycode: "punycode/" },
  chunkNames: "chunks/[name]-[hash]",
  // Libraries keep their class and function names (node-fetch checks `constructor.name` of a signal);
  // our own code does without `keepNames`, which cost a call per closure per turn
  // (cmd/bundle-keep-names.mjs says why).
  keepNames: false,
  legalComments: "none",
  logLevel: "warning",
  plugins: [builtinsWithoutNamespace, zodEnglishOnly, keepLibraryNames],
});
// Every output file in ASCII. esbuild escapes non-ASCII characters in code but keeps them in comments
// (an em dash in zod's, emoji in p-queue's); one such character makes V8 hold the whole file's source
// as a two-byte string for as long as the daemon runs: twice the memory (measured: the zod chunk held
// 836 KB instead of 418 KB, Telegram's and Discord's chunks 6.8 MB instead of 3.4 MB). `\uXXXX` means
// the same character in a string, a template or a regular expression, and is plain text in a comment.
const files = [
  join(outdir, "familiar.js"),
  ...readdirSync(join(outdir, "chunks")).map((f) => join(outdir, "chunks", f)),
];
for (const file of files.filter((f) => f.endsWith(".js"))) {
  const text = readFileSync(file, "utf8");
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) continue;
  // eslint-disable-next-line no-control-regex
  writeFileSync(
    file,
    text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}
// The launcher heads the entry only (esbuild's banner goes on every chunk); esbuild marks the output
// executable only for a `#!` of the entry's own.
const entry = join(outdir, "familiar.js");
writeFileSync(entry, launcher + readFileSync(entry, "utf8"));
chmodSync(entry, 0o755);
