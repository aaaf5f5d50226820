import type { z } from "zod";

/** One problem in a config file: where, what was expected, what was found. */
export interface ConfigProblem {
  path: string;
  message: string;
}

/** Thrown when a config cannot be loaded; `problems` lists every error, not just the first. */
export class ConfigError extends Error {
  readonly code = "CONFIG_INVALID";
  constructor(
    readonly file: string,
    readonly problems: ConfigProblem[],
  ) {
    super(
      `${file}: ${problems.length} config error(s):\n${problems.map((p) => `  ${formatProblem(p)}`).join("\n")}`,
    );
    this.name = "ConfigError";
  }
}

/** `gateway.port: expected an integer 1-65535, got "abc"` */
export function formatProblem(p: ConfigProblem): string {
  return p.path ? `${p.path}: ${p.message}` : p.message;
}

/** Turns zod issues into problems that name the key path, the expectation and the value found. */
export function issuesToProblems(issues: readonly z.core.$ZodIssue[], input: unknown): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = joinPath([...issue.path, key]);
        out.push({ path, message: `unknown key (not part of the config schema)` });
      }
      continue;
    }
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      // Report the branch that got furthest rather than a generic "invalid input".
      const best = issue.errors.reduce((a, b) => (deepest(b) > deepest(a) ? b : a));
      const nested = issuesToProblems(best, input);
      if (nested.length > 0 && deepest(best) > issue.path.length) {
        out.push(...nested);
        continue;
      }
    }
    const path = joinPath(issue.path);
    const found = valueAt(input, issue.path);
    let expected = issue.message;
    if (issue.code === "invalid_type" && /^Invalid input/.test(expected))
      expected = `expected ${issue.expected}`;
    if (issue.code === "invalid_value" && /^Invalid/.test(expected))
      expected = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    const got = found.present ? describe(found.value) : "nothing (key missing)";
    out.push({ path, message: `${expected}, got ${got}` });
  }
  return out;
}

function deepest(issues: readonly z.core.$ZodIssue[]): number {
  return Math.max(0, ...issues.map((i) => i.path.length + (i.code === "invalid_type" ? 0 : 0.5)));
}

function joinPath(path: readonly PropertyKey[]): string {
  let s = "";
  for (const p of path) {
    if (typeof p === "number") s += `[${p}]`;
    else s += s ? `.${String(p)}` : String(p);
  }
  return s;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): { present: boolean; value?: unknown } {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== "object" || !(p in (cur as object))) return { present: false };
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return { present: true, value: cur };
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return `a list (${v.length} items)`;
  if (typeof v === "object") return "a mapping";
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}..."` : s;
}
