/**
 * Gives the C heap's free pages back to the system: glibc's `malloc_trim(0)`, called through koffi (an
 * FFI with prebuilt binaries per platform, so nothing compiles at install).
 *
 * Why: after a burst of turns, SQLite's page cache (given back by `PRAGMA shrink_memory`), Node's
 * parser and socket buffers and V8's off-heap allocations are freed into glibc's main heap. glibc
 * returns only the free top of that heap (`MALLOC_TRIM_THRESHOLD_`); a chunk still in use near the top
 * pins every free page below it, so the daemon kept 10+ MB after a burst for as long as it ran
 * (BENCHMARKS.md, "RSS 30 s after the load"). `malloc_trim(0)` also releases whole free pages in the
 * middle of the heap (madvise), which nothing in Node can do.
 *
 * Invariants: it is only ever an optimisation. Where it cannot apply (not Linux, musl instead of glibc,
 * koffi missing for the platform) the trimmer is a no-op that reports why once; it never throws. koffi is
 * loaded on the first trim, never at start, so a daemon that is never busy pays nothing for it.
 */
import { createRequire } from "node:module";

/** What a trim did. */
export interface TrimResult {
  /** True when memory was released (malloc_trim's own answer). */
  readonly released: boolean;
  /** Why nothing could be trimmed, when the trimmer is unavailable. */
  readonly unavailable?: string;
}

type TrimFn = (pad: number) => number;

interface KoffiLike {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
}

let loaded: TrimFn | { unavailable: string } | undefined;

function load(): TrimFn | { unavailable: string } {
  if (process.platform !== "linux")
    return { unavailable: `malloc_trim is glibc's; this is ${process.platform}` };
  // musl (Alpine) has no malloc_trim; glibc reports its version in the process report header.
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
    ?.header;
  if (!header?.glibcVersionRuntime) return { unavailable: "the C library is not glibc (musl?)" };
  try {
    const koffi = createRequire(import.meta.url)("koffi") as KoffiLike;
    const fn = koffi.load("libc.so.6").func("int malloc_trim(size_t pad)");
    return (pad: number) => Number(fn(pad));
  } catch (err) {
    return { unavailable: `koffi could not load malloc_trim: ${(err as Error).message}` };
  }
}

/** Calls `malloc_trim(0)` (loading koffi the first time). Never throws. */
export function mallocTrim(): TrimResult {
  loaded ??= load();
  if (typeof loaded !== "function") return { released: false, unavailable: loaded.unavailable };
  try {
    return { released: loaded(0) === 1 };
  } catch (err) {
    loaded = { unavailable: `malloc_trim failed: ${(err as Error).message}` };
    return { released: false, unavailable: loaded.unavailable };
  }
}
