/**
 * The `familiar` entry. Four steps, in this order, and nothing else here:
 * 1. refuse a Node that is too old, in one line, before any module that loads a native addon
 *    (better-sqlite3 crashes an old Node with a bare "Segmentation fault");
 * 2. for the daemon, re-execute once with its runtime settings (cmd/runtime-tuning.ts) unless the
 *    bin's sh launcher (cmd/launcher.sh) applied them already;
 * 3. turn on V8's code cache for the modules that follow (cmd/compile-cache.ts);
 * 4. only then import the CLI (cmd/main.ts).
 *
 * Invariant: this file imports statically only cmd/node-version.cjs (plain ES5, no imports) and
 * cmd/runtime-tuning.ts and cmd/compile-cache.ts (Node built-ins only, nothing run at import); everything else is a dynamic
 * import after the check, so ESM's hoisting of static imports cannot load a native module first.
 */
import nodeVersion from "./node-version.cjs";
import { useCompileCache } from "./compile-cache.js";
import { applyRuntimeTuning, HeapSettingError } from "./runtime-tuning.js";

const tooOld = nodeVersion.refusal(process.versions.node);
if (tooOld) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(1);
}
// Owner data is private on disk (docs/security.md, invariant 5): whatever the CLI or the daemon it
// runs creates (config, workspace, data dir, database) is owner-only from the first byte.
process.umask(0o077);
let where: "here" | "child" = "here";
try {
  where = await applyRuntimeTuning();
} catch (err) {
  if (!(err instanceof HeapSettingError)) throw err;
  process.stderr.write(`familiar: ${err.message}\n`);
  process.exit(1);
}
if (where === "here") {
  useCompileCache();
  await import("./main.js");
}
