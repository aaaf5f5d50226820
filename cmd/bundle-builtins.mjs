// An esbuild plugin for cmd/bundle.mjs (kept apart so test/build/bundle-builtins.test.ts can run it).
import { builtinModules } from "node:module";

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
export const builtinsWithoutNamespace = {
  name: "builtins-without-namespace",
  setup(b) {
    const names = new Set(builtinModules);
    b.onResolve({ filter: /^(node:)?[a-z_/0-9]+$/ }, (args) => {
      const id = args.path.replace(/^node:/, "");
      if (!names.has(id) || (args.kind !== "import-statement" && args.kind !== "dynamic-import"))
        return undefined;
      // Only the built-ins with one of those getters (node:http, node:crypto): every shim is a chunk
      // of its own (each is shared by many entry points), and a start loads each as one more ESM
      // module (issue 38: `familiar --version` loaded 14 modules, 8 of them shims of fs, path ...).
      if (!Object.keys(process.getBuiltinModule(`node:${id}`)).some((k) => LAZY_GETTERS.has(k)))
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
