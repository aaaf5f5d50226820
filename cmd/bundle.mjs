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
import { builtinModules } from "node:module";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "dist", "bundle");
rmSync(outdir, { recursive: true, force: true });

/**
 * Node built-ins imported with `import` become `process.getBuiltinModule()` reads.
 *
 * Why: an ESM import of a built-in builds a namespace from the module's exports, reading every
 * getter on it. `node:http` re-exports undici's `WebSocket`, `CloseEvent` and `MessageEvent` through
 * lazy getters, so `import { createServer } from "node:http"` loads undici, http2, tls, zlib and
 * perf_hooks (75 internal modules; ~9 MB of RSS, measured) that the daemon never uses.
 * `process.getBuiltinModule` returns the CommonJS object; each export is then read as the namespace
 * would read it, except those undici classes and `crypto.webcrypto`/`subtle` (~0.7 MB, unused).
 * Invariant: importing one of them by name fails the build (no matching export) instead of silently
 * changing; the default export is the module itself.
 */
const LAZY_GETTERS = new Set([
  "WebSocket",
  "CloseEvent",
  "MessageEvent",
  "EventSource",
  "webcrypto",
  "subtle",
]);
const builtinsWithoutNamespace = {
  name: "builtins-without-namespace",
  setup(b) {
    const names = new Set(builtinModules);
    b.onResolve({ filter: /^(node:)?[a-z_/0-9]+$/ }, (args) => {
      const id = args.path.replace(/^node:/, "");
      if (!names.has(id) || (args.kind !== "import-statement" && args.kind !== "dynamic-import"))
        return undefined;
      return { path: id, namespace: "node-builtin" };
    });
    b.onLoad({ filter: /.*/, namespace: "node-builtin" }, (args) => {
      const mod = process.getBuiltinModule(`node:${args.path}`);
      const keys = Object.keys(mod).filter(
        (k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== "default" && !LAZY_GETTERS.has(k),
      );
      const lines = [
        `const m = process.getBuiltinModule(${JSON.stringify(`node:${args.path}`)});`,
        "export default m;",
      ];
      for (const k of keys) lines.push(`export const ${k} = m.${k};`);
      return { contents: lines.join("\n"), loader: "js" };
    });
  },
};

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
    js: 'import { createRequire as __familiarRequire } from "node:module";\nconst require = __familiarRequire(import.meta.url);',
  },
  chunkNames: "chunks/[name]-[hash]",
  legalComments: "none",
  logLevel: "warning",
  plugins: [builtinsWithoutNamespace],
});
