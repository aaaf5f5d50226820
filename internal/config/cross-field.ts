/**
 * Cross-field checks alongside field errors, in one pass: `config check` promises every error at
 * once, but checks that need a whole valid config (a model ref naming a configured provider, a
 * token for a public bind) could only run after the field errors were fixed. Here the keys with
 * field errors are dropped (their defaults stand in) and the rest is checked as a whole.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { parseConfigText } from "./load.js";
import { ConfigError, type ConfigProblem } from "./errors.js";
import type { Config } from "./schema.js";

type Node = Record<string, unknown> | unknown[];

/** `a.b[2].c` -> ["a", "b", 2, "c"] */
function segments(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]!);
  return out;
}

/** Removes the value at `path` (no-op when absent). Array items become null so indexes stay put. */
function prune(root: unknown, path: string, removed: Map<string, Set<number>>): boolean {
  const segs = segments(path);
  if (segs.length === 0) return false;
  let cur: unknown = root;
  for (const s of segs.slice(0, -1)) {
    if (cur === null || typeof cur !== "object") return false;
    cur = (cur as Record<string | number, unknown>)[s];
  }
  if (cur === null || typeof cur !== "object") return false;
  const last = segs.at(-1)!;
  if (Array.isArray(cur) && typeof last === "number") {
    if (last >= cur.length) return false;
    cur.splice(last, 1, null);
    const arrayPath = path.replace(/\[\d+\]$/, "");
    removed.set(arrayPath, (removed.get(arrayPath) ?? new Set()).add(last));
    return true;
  }
  if (!(String(last) in (cur as Node))) return false;
  delete (cur as Record<string, unknown>)[String(last)];
  return true;
}

/**
 * The config of `file` with every key that has a field problem removed, or undefined when that
 * cannot be made valid in a few rounds (a YAML syntax error, a problem without a path).
 */
export function prunedConfig(
  file: string,
  problems: readonly ConfigProblem[],
  env: NodeJS.ProcessEnv = process.env,
  removed: Map<string, Set<number>> = new Map(),
  revealed: ConfigProblem[] = [],
): Config | undefined {
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
  let pending = problems;
  for (let round = 0; round < 4; round++) {
    for (const p of pending) if (!prune(raw, p.path, removed)) return undefined;
    // Pruned array items are null: drop them now (their indexes were only needed while pruning).
    const clean = JSON.parse(
      JSON.stringify(raw, (_k, v: unknown) => (Array.isArray(v) ? v.filter((x) => x !== null) : v)),
    ) as unknown;
    try {
      return parseConfigText(JSON.stringify(clean), file, env).config;
    } catch (err) {
      if (!(err instanceof ConfigError)) return undefined;
      // The schema's own checks across keys (a model naming no configured provider) only run once
      // the fields are valid: what a later round finds is reported too, not just pruned.
      // Paths of the pruned config name items of the file's arrays after the dropped ones: map them
      // back now, while `removed` holds exactly the removals that shaped this round's config.
      const mapped = err.problems.map((p) => ({ ...p, path: originalPath(p.path, removed) }));
      revealed.push(...mapped);
      pending = mapped;
    }
  }
  return undefined;
}

/**
 * Cross-field problems of a config that also has field problems: those of `check` on the pruned
 * config whose key has no field problem already.
 */
export function crossFieldProblems(
  file: string,
  fieldProblems: readonly ConfigProblem[],
  check: (cfg: Config) => ConfigProblem[],
  env: NodeJS.ProcessEnv = process.env,
): ConfigProblem[] {
  const removed = new Map<string, Set<number>>();
  const revealed: ConfigProblem[] = [];
  const cfg = prunedConfig(file, fieldProblems, env, removed, revealed);
  if (!cfg) return [];
  const seen = new Set(fieldProblems.map((p) => p.path));
  const out: ConfigProblem[] = [];
  const checked = check(cfg).map((p) => ({ ...p, path: originalPath(p.path, removed) }));
  for (const p of [...revealed, ...checked]) {
    if (seen.has(p.path)) continue;
    seen.add(p.path);
    out.push(p);
  }
  return out;
}

/** `models.fallbacks[1]` of the pruned config -> its index in the file (items before it were dropped). */
function originalPath(path: string, removed: Map<string, Set<number>>): string {
  for (const [arrayPath, gone] of removed) {
    const m = new RegExp(`^${arrayPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\[(\\d+)\\]`).exec(path);
    if (!m) continue;
    let left = Number(m[1]);
    let i = 0;
    for (; ; i++) if (!gone.has(i) && left-- === 0) break;
    return `${arrayPath}[${i}]${path.slice(m[0].length)}`;
  }
  return path;
}
