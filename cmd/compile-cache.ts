/**
 * V8's code cache for our own modules (Node's `module.enableCompileCache`), so a start reads the
 * compiled bundle from disk instead of parsing ~2 MB of JavaScript again. Measured on the daemon's
 * start (docs/idle-memory.md, "Start-up"): about a fifth less time to /healthz.
 *
 * Where: `$XDG_CACHE_HOME/familiar/compile-cache`, else `~/.cache/familiar/compile-cache`.
 * Invariants (docs/security.md, "Compile cache"):
 * - the cache is code the daemon runs, so it lives only in a directory the owner alone can write:
 *   created owner-only (the CLI runs under umask 077), and not used when it exists owned by another
 *   user or writable by group or others, nor when it is a symlink;
 * - never under a shared temp dir, never anywhere the tool sandbox can write (it hides the owner's
 *   home);
 * - the owner decides: `NODE_COMPILE_CACHE` (Node's own variable) wins, `FAMILIAR_COMPILE_CACHE=0`
 *   or `NODE_DISABLE_COMPILE_CACHE=1` turns it off.
 */
import { lstatSync, mkdirSync } from "node:fs";
// A namespace import, not named ones: on a Node without these functions (20, refused by the version
// check a moment later) a named import would fail at link time, before that check could say why.
import * as nodeModule from "node:module";
import { join } from "node:path";

/** The directory to use, or null: no home, turned off, or Node's own variable set. */
export function compileCacheDir(env: Readonly<Record<string, string | undefined>>): string | null {
  if (env.FAMILIAR_COMPILE_CACHE === "0" || env.NODE_DISABLE_COMPILE_CACHE) return null;
  if (env.NODE_COMPILE_CACHE) return null; // Node enabled it already, where the owner said
  const base = env.XDG_CACHE_HOME?.startsWith("/")
    ? env.XDG_CACHE_HOME
    : env.HOME?.startsWith("/")
      ? join(env.HOME, ".cache")
      : undefined;
  return base ? join(base, "familiar", "compile-cache") : null;
}

/** True when `dir` is a real directory of this user that nobody else can write. */
export function ownerOnly(dir: string, uid: number): boolean {
  const st = lstatSync(dir);
  return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
}

/** Turns the cache on when it is safe; writes what was compiled 5 s later (a daemon may never exit). */
export function useCompileCache(): void {
  const dir = compileCacheDir(process.env);
  if (!dir || typeof process.getuid !== "function") return;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!ownerOnly(dir, process.getuid())) return;
    const { enableCompileCache, flushCompileCache } = nodeModule as Partial<typeof nodeModule>;
    if (!enableCompileCache) return;
    enableCompileCache(dir);
    if (flushCompileCache) setTimeout(() => flushCompileCache(), 5000).unref();
  } catch {
    // A read-only or missing home: start without the cache, as before.
  }
}
