/**
 * "Did you mean channels.telegram?" for a key written at the wrong level (issue 47): a top-level
 * `telegram:` is a real key of the schema, only in another place. Typos at the right level are
 * errors.ts's `suggest`; this finds where a correctly spelled key belongs.
 */
import type { z } from "zod";

/** The schema beneath optional/default/pipe wrappers (shared with errors.ts's key lists). */
export function unwrap(s: z.core.$ZodType): z.core.$ZodType {
  let cur = s;
  for (let i = 0; i < 20; i++) {
    const def = cur._zod.def as unknown as Record<string, unknown>;
    const next = (def.innerType ?? (def.type === "pipe" ? def.in : undefined)) as z.core.$ZodType | undefined;
    if (!next) return cur;
    cur = next;
  }
  return cur;
}

/** Every fixed key path of the schema (record and catchall entries are named by the owner: skipped). */
function keyPaths(schema: z.core.$ZodType, prefix: string[], out: string[][], depth = 0): void {
  if (depth > 6) return;
  const def = unwrap(schema)._zod.def as unknown as Record<string, unknown>;
  if (def.type !== "object") return;
  for (const [k, v] of Object.entries(def.shape as Record<string, z.core.$ZodType>)) {
    const p = [...prefix, k];
    out.push(p);
    keyPaths(v, p, out, depth + 1);
  }
}

const cache = new WeakMap<object, string[][]>();

/**
 * The dotted path where `key` (found under `at`) exists in the schema, the shallowest first, or
 * undefined when it exists nowhere else. A key that also exists right where it was written is no
 * misplacement, so `at` itself is never suggested.
 */
export function misplacedKeyHint(
  schema: z.core.$ZodType,
  key: string,
  at: readonly PropertyKey[],
): string | undefined {
  let paths = cache.get(schema);
  if (!paths) {
    paths = [];
    keyPaths(schema, [], paths);
    cache.set(schema, paths);
  }
  const here = [...at.map(String), key].join(".");
  const found = paths
    .filter((p) => p[p.length - 1]?.toLowerCase() === key.toLowerCase())
    .map((p) => p.join("."))
    .filter((p) => p !== here)
    .sort((a, b) => a.split(".").length - b.split(".").length || a.localeCompare(b));
  return found[0];
}
