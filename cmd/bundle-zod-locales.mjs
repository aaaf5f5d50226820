// An esbuild plugin for cmd/bundle.mjs: zod's locale table holds English only.
//
// Why: zod 4 re-exports every locale (`export * as locales from "../locales/index.js"`) from the
// `z` namespace the code imports, so esbuild cannot drop them: 66 translations of its error
// messages, 373 KB of the 786 KB zod chunk, parsed at every start. Familiar reports validation errors
// in English only and never calls `z.locales.*`; zod itself sets English with
// `config(en())` from `../locales/en.js`, which this plugin does not touch.
// Invariant: `z.locales` (and `z.core.locales`) has `en` and nothing else in the bundle.
import { dirname, join } from "node:path";

export const zodEnglishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)) return undefined;
      return { path: join(dirname(args.importer), "..", "locales", "en.js"), namespace: "zod-locales" };
    });
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
      loader: "js",
    }));
  },
};
