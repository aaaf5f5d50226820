/**
 * Config errors in plain words. Every problem names the key path, what was expected and what was found,
 * e.g. `gateway.port: expected an integer 1-65535, got "abc"`; zod's internal wording ("Invalid input",
 * "Too small: expected number to be >=200") never reaches the user.
 *
 * Over 300 lines on purpose: every config error message lives here, so their wording stays
 * consistent.
 */
import { misplacedKeyHint, unwrap } from "./misplaced-key.js";
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

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/**
 * Turns zod issues into problems that name the key path, the expectation and the value found.
 * `schema` (optional) is the schema that produced the issues; with it, unknown keys get a
 * "did you mean" suggestion from the keys that are allowed at that place.
 */
export function issuesToProblems(
  issues: readonly Issue[],
  input: unknown,
  schema?: z.core.$ZodType,
): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  const seen = new Set<string>();
  for (const p of collect(issues, [], input, schema)) {
    const key = formatProblem(p);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(p);
  }
  return out;
}

function collect(
  issues: readonly Issue[],
  prefix: Path,
  input: unknown,
  schema: z.core.$ZodType | undefined,
): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === "unrecognized_keys") {
      const known = schema ? knownKeys(schema, path) : [];
      for (const key of issue.keys) {
        const hint = suggest(key, known);
        // Spelled right but in the wrong place (a top-level `telegram:`): name where it belongs.
        const moved = !hint && schema ? misplacedKeyHint(schema, key, path) : undefined;
        out.push({
          path: joinPath([...path, key]),
          message: hint
            ? `unknown key (did you mean "${hint}"?)`
            : moved
              ? `unknown key here (did you mean ${moved}?)`
              : "unknown key (not part of the config schema)",
        });
      }
      continue;
    }
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      out.push(...unionProblems(issue.errors, path, input, schema, issue.message));
      continue;
    }
    out.push(problemFor(issue, path, input));
  }
  return out;
}

/**
 * A union failed. Zod reports one issue list per branch, with paths relative to the union. When a branch
 * got past the type check (the user clearly meant that shape), its nested problems are the useful ones;
 * when every branch failed on the type itself, say which types would have been accepted.
 */
function unionProblems(
  branches: readonly (readonly Issue[])[],
  path: Path,
  input: unknown,
  schema: z.core.$ZodType | undefined,
  fallback: string,
): ConfigProblem[] {
  const typeOnly = (b: readonly Issue[]): boolean =>
    b.length > 0 && b.every((i) => i.path.length === 0 && i.code === "invalid_type");
  const matched = branches.filter((b) => !typeOnly(b) && b.length > 0);
  if (matched.length > 0) {
    // Prefer the branch whose problems are deepest: it matched the most of the input.
    const best = matched.reduce((a, b) => (depth(b) > depth(a) ? b : a));
    return collect(best, path, input, schema);
  }
  const expected = [
    ...new Set(
      branches.flatMap((b) => b.map((i) => (i.code === "invalid_type" ? typeName(i.expected) : ""))),
    ),
  ].filter(Boolean);
  const found = valueAt(input, path);
  const what = expected.length > 0 ? `expected ${orList(expected)}` : fallback;
  return [
    { path: joinPath(path), message: `${what}, got ${found.present ? describe(found.value) : MISSING}` },
  ];
}

const MISSING = "nothing (key missing)";

function problemFor(issue: Issue, path: Path, input: unknown): ConfigProblem {
  const found = valueAt(input, path);
  const expected = expectation(issue);
  // A refinement over a whole mapping/list ("exactly one of cron, every or at") gains nothing from
  // "got a mapping"; scalars and missing keys always say what was found.
  const isContainer = found.present && found.value !== null && typeof found.value === "object";
  if (issue.code === "custom" && isContainer) return { path: joinPath(path), message: expected };
  const got = found.present ? describe(found.value) : MISSING;
  // `port:18790` (no space after the colon) is one string in YAML, not a key and a value.
  const hint =
    issue.code === "invalid_type" &&
    (issue.expected === "object" || issue.expected === "record") &&
    typeof found.value === "string" &&
    /^[\w-]+:\S/.test(found.value)
      ? ' (put a space after the colon: "key: value")'
      : "";
  return { path: joinPath(path), message: `${expected}, got ${got}${hint}` };
}

/** True when the message is zod's default wording rather than one written in the schema. */
function isDefault(message: string): boolean {
  return /^(Invalid|Too (small|big)|Unrecognized)/.test(message);
}

function expectation(issue: Issue): string {
  if (!isDefault(issue.message)) return issue.message;
  switch (issue.code) {
    case "invalid_type":
      return `expected ${typeName(issue.expected)}`;
    case "invalid_value":
      return issue.values.length === 1
        ? `expected ${JSON.stringify(issue.values[0])}`
        : `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return sizeBound(issue.origin, ">=", ">", issue.minimum, issue.inclusive ?? true);
    case "too_big":
      return sizeBound(issue.origin, "<=", "<", issue.maximum, issue.inclusive ?? true);
    case "invalid_format":
      if (issue.format === "url") return "expected a URL such as https://example.com";
      if (issue.format === "regex" && issue.pattern) return `expected a string matching ${issue.pattern}`;
      return `expected a valid ${issue.format}`;
    case "not_multiple_of":
      return `expected a multiple of ${String(issue.divisor)}`;
    case "invalid_key":
      return "invalid key";
    default:
      return issue.message;
  }
}

function sizeBound(
  origin: string,
  inclusiveOp: string,
  exclusiveOp: string,
  bound: number | bigint,
  inclusive: boolean,
): string {
  const n = Number(bound);
  const op = inclusive ? inclusiveOp : exclusiveOp;
  const least = inclusiveOp === ">=";
  if (origin === "string") {
    if (least && n === 1) return "expected a non-empty string";
    return `expected a string of ${least ? "at least" : "at most"} ${n} characters`;
  }
  if (origin === "array" || origin === "set") {
    if (least && n === 1) return "expected a non-empty list";
    return `expected a list of ${least ? "at least" : "at most"} ${n} items`;
  }
  return `expected a number ${op} ${n}`;
}

const TYPE_NAMES: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  bigint: "an integer",
  boolean: "true or false",
  object: "a mapping",
  record: "a mapping",
  map: "a mapping",
  array: "a list",
  tuple: "a list",
  set: "a list",
  null: "null",
  date: "a date",
};

function typeName(t: string): string {
  return TYPE_NAMES[t] ?? t;
}

function orList(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

function depth(issues: readonly Issue[]): number {
  return Math.max(0, ...issues.map((i) => i.path.length + (i.code === "invalid_type" ? 0 : 0.5)));
}

function joinPath(path: Path): string {
  let s = "";
  for (const p of path) {
    if (typeof p === "number") s += `[${p}]`;
    else s += s ? `.${String(p)}` : String(p);
  }
  return s;
}

function valueAt(root: unknown, path: Path): { present: boolean; value?: unknown } {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== "object" || !(p in (cur as object))) return { present: false };
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return { present: true, value: cur };
}

/** How a found value reads in an error: strings quoted (and cut), containers by kind. */
export function describe(v: unknown): string {
  if (v === null || v === undefined) return "nothing (empty value)";
  if (Array.isArray(v)) return `a list (${v.length} item${v.length === 1 ? "" : "s"})`;
  if (typeof v === "object") return "a mapping";
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}..."` : s;
}

/** Keys an object schema accepts at `path` (through defaults, optionals, pipes, records and lists). */
function knownKeys(root: z.core.$ZodType, path: Path): string[] {
  let cur: z.core.$ZodType | undefined = unwrap(root);
  for (const p of path) {
    if (!cur) return [];
    const def = cur._zod.def as unknown as Record<string, unknown>;
    if (def.type === "object") {
      const shape = def.shape as Record<string, z.core.$ZodType>;
      cur = typeof p === "string" && p in shape ? shape[p] : (def.catchall as z.core.$ZodType | undefined);
    } else if (def.type === "record") cur = def.valueType as z.core.$ZodType;
    else if (def.type === "array") cur = def.element as z.core.$ZodType;
    else return [];
    cur = cur ? unwrap(cur) : undefined;
  }
  if (!cur) return [];
  const def = cur._zod.def as unknown as Record<string, unknown>;
  return def.type === "object" ? Object.keys(def.shape as object) : [];
}

/** The closest known name by edit distance, when close enough to be a plausible typo. */
export function suggest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(key.length / 3)) ? best : undefined;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, at(i - 2, j - 2) + 1);
      d[i]![j] = v;
    }
  }
  return at(a.length, b.length);
}
