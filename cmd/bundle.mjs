// Bundles the CLI into dist/bundle/ (run by `npm run build` after tsc).
//
// Why: a cold start of the unbundled build spends most of its CPU in Node's module loader
// (resolving, reading and compiling ~130 of our files plus several hundred of zod, yaml, pino,
// commander ...). One ESM bundle with code splitting loads a handful of files instead; the
// `import()`s that keep channel libraries (grammy, discord.js), the MCP SDK and the like out of a
// start stay lazy because each becomes its own chunk.
//
// Invariants: better-sqlite3 stays external (native addon, found in node_modules at run time);
// modules that look for files beside themselves (web chat page, bundled skills, package.json) walk
// up to the package root, so they work from dist/bundle/ as well as from dist/ and the sources.
import { build } from "esbuild";
import { builtinsWithoutNamespace } from "./bundle-builtins.mjs";
import { zodEnglishOnly } from "./bundle-zod-locales.mjs";
import { chmodSync, readFileSync, rmSync } from "node:fs";
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
  external: ["better-sqlite3", "sqlite-vec"],
  // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
  banner: {
    js:
      launcher +
      'import { createRequire as __familiarRequire } from "node:module";\nconst require = __familiarRequire(import.meta.url);',
  },
  chunkNames: "chunks/[name]-[hash]",
  // Classes keep their own `.name` when esbuild renames them to avoid a clash in a chunk: node-fetch
  // (grammY's fetch) checks `signal.constructor.name === "AbortSignal"`, and the abort-controller
  // polyfill's class became `AbortSignal2` once code in the Telegram chunk named the global
  // `AbortSignal` (every getMe then failed with "Expected signal to be an instanceof AbortSignal").
  keepNames: true,
  legalComments: "none",
  logLevel: "warning",
  plugins: [builtinsWithoutNamespace, zodEnglishOnly],
});
// esbuild marks the output executable only for a `#!` of the entry's own; the launcher is a banner.
chmodSync(join(outdir, "familiar.js"), 0o755);
