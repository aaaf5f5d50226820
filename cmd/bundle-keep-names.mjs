// An esbuild plugin for cmd/bundle.mjs: libraries keep their own class and function names; our code
// pays nothing for it.
//
// Why: esbuild renames a top-level declaration that clashes with another in the same chunk
// (`AbortSignal` becomes `AbortSignal2`), and libraries check names: node-fetch (grammY's fetch)
// refuses a signal whose `constructor.name` is not "AbortSignal", discord.js compares
// `constructor.name` with "Collection". The global `keepNames` option fixed that, but it also wraps
// every closure of ours in a `__name(fn, "x")` call, made again on every turn: 9 % of the daemon's
// CPU gap to 9abe386 under load (BENCHMARKS.md, issue 46 item 10). Our own classes never depend on
// their `.name` (every error class sets `this.name` to a literal), so the names are kept where they
// can matter: each file under node_modules is passed through esbuild's own transform with
// `keepNames` before it is bundled, which writes the same `__name` calls esbuild would have, into
// that file only.
// Invariant: every class and named function from node_modules keeps its name in the bundle
// (test/architecture/bundle-names.test.ts loads the built Telegram chunk's signal check).
import { readFile } from "node:fs/promises";
import { transform } from "esbuild";

const loaders = { ".js": "js", ".mjs": "js", ".cjs": "js" };

export const keepLibraryNames = {
  name: "keep-library-names",
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const ext = args.path.slice(args.path.lastIndexOf("."));
      try {
        const out = await transform(source, {
          keepNames: true,
          loader: loaders[ext] ?? "js",
          sourcefile: args.path,
          legalComments: "none",
        });
        return { contents: out.code, loader: "js" };
      } catch (err) {
        // A file the transform alone cannot take (a CommonJS top-level `return`) is bundled as it is,
        // and the build says so.
        const text = `names not kept: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`;
        return { contents: source, loader: "js", warnings: [{ text }] };
      }
    });
  },
};
