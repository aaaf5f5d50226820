/**
 * Loading: read YAML, substitute `${VAR}` / `${VAR:-default}` from the environment (and the owner's
 * `.env` files, config/env-file.ts; the process wins), validate with zod, resolve relative paths
 * against the config file's directory.
 *
 * Over 300 lines on purpose: reading a config file is one pipeline (YAML, `${VAR}` from the
 * environment and the owner's .env files, the schema, paths); splitting it would scatter its order.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { isMap, isPair, isScalar, isSeq, parseDocument, type Document, type Node } from "yaml";
import { configSchema, type Config } from "./schema.js";
import { ConfigError, describe, issuesToProblems, type ConfigProblem } from "./errors.js";
import { applyEnvOverrides, envPort } from "./env-overrides.js";
import { EnvFileError, withEnvFiles } from "./env-file.js";

/** Parse options for the config: read once per start or reload, so zod's JIT does not pay (below). */
const ONCE = { jitless: true } as const;

/** A loaded config plus where it came from. */
export interface LoadedConfig {
  config: Config;
  file: string;
  /** Directory that relative paths in the config are resolved against. */
  baseDir: string;
  /**
   * With `deferSecrets`: the `${VAR}` references whose variable is not set. Their values are left as
   * the literal reference text; a command that uses one must refuse with {@link missingEnvMessage}.
   */
  unresolvedEnv: UnresolvedEnv[];
  /** The environment files (config/env-file.ts) whose variables filled `${VAR}`, when read from disk. */
  envFiles?: string[];
}

/** A `${NAME}` reference at `path` whose variable is not set. */
export interface UnresolvedEnv {
  path: string;
  name: string;
}

/** How to load. */
export interface LoadOptions {
  /**
   * Resolve secrets only where they are used: a `${VAR}` whose variable is not set is no error (its
   * value stays the literal `${VAR}` text and is listed in `unresolvedEnv`), unless that key then
   * fails validation. For commands that call no provider or channel (`usage`, `trace`, `sessions`,
   * `cron`, `pairing`, the gateway clients): the provider key need not be in their shell.
   */
  deferSecrets?: boolean;
}

/** "models.providers.openai.api_key: environment variable OPENAI_API_KEY is not set (...)" */
export function missingEnvMessage(u: UnresolvedEnv): string {
  return `${u.path}: environment variable ${u.name} is not set (export it, or put it in .env beside config.yaml, mode 0600)`;
}

/** Reads and validates a config file. Throws {@link ConfigError} listing every problem. */
export function loadConfigFile(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: LoadOptions = {},
): LoadedConfig {
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, "utf8");
  } catch (err) {
    // A fresh directory has no config yet: say how to make one rather than only "ENOENT".
    const hint =
      (err as NodeJS.ErrnoException).code === "ENOENT"
        ? " (create one with `familiar init DIR`; or name the file with --config PATH or FAMILIAR_CONFIG)"
        : "";
    throw new ConfigError(abs, [
      { path: "", message: `cannot read config file: ${(err as Error).message}${hint}` },
    ]);
  }
  let files: string[];
  try {
    ({ env, files } = withEnvFiles(abs, rawDataDir(text, abs), env));
  } catch (err) {
    if (err instanceof EnvFileError) throw new ConfigError(abs, [{ path: "", message: err.message }]);
    throw err;
  }
  return { ...parseConfigText(text, abs, env, opts), envFiles: files };
}

/** `data_dir` as written (absolute), for finding `<data_dir>/.env` before the config is resolved. */
function rawDataDir(text: string, file: string): string {
  let d: unknown;
  try {
    d = (parseDocument(text).toJS() as { data_dir?: unknown } | null)?.data_dir;
  } catch {
    d = undefined;
  }
  const dir = typeof d === "string" && d && !d.includes("${") ? d : "./data";
  return isAbsolute(dir) ? dir : resolve(dirname(file), dir);
}

/** Parses config text (already read). Exposed for tests and `config check`. */
export function parseConfigText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: LoadOptions = {},
): LoadedConfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({
        path: "",
        // yaml's first line reads "<what> at line L, column C:" followed by a code frame; keep the line.
        message: `YAML syntax error: ${(e.message.split("\n")[0] ?? e.message).replace(/:\s*$/, "")}`,
      })),
    );
  }
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(file, [
      { path: "", message: `expected a mapping of keys at the top level, got ${describe(raw)}` },
    ]);
  }
  const envProblems: ConfigProblem[] = [];
  const whole: (string | number)[][] = [];
  const deferred: UnresolvedEnv[] = [];
  let substituted = substituteEnv(raw, env, [], envProblems, whole, opts.deferSecrets ? deferred : undefined);
  // Without zod's JIT: it compiles a parser per object schema on the first parse (new Function), which
  // pays off for a schema parsed often; the config is parsed once per start or reload (issue 38,
  // measured: most of zod's share of a start).
  let parsed = configSchema.safeParse(substituted, ONCE);
  if (!parsed.success && whole.length > 0) {
    // `port: ${PORT}` yields the string "8080"; a value that is entirely one variable reference takes
    // the type the schema wants (number or boolean) when it reads as one. Strings stay strings.
    const coerced = coerceSubstituted(substituted, parsed.error.issues, whole);
    if (coerced !== substituted) {
      substituted = coerced;
      parsed = configSchema.safeParse(substituted, ONCE);
    }
  }
  // Deferred references are errors only where the value they left fails validation.
  const issuePaths = parsed.success ? [] : issuesToProblems(parsed.error.issues, substituted, configSchema);
  const failing = (path: string): boolean =>
    issuePaths.some((p) => p.path === path || p.path.startsWith(`${path}.`) || p.path.startsWith(`${path}[`));
  for (const d of deferred)
    if (failing(d.path))
      envProblems.push({
        path: d.path,
        message: `environment variable ${d.name} is not set (use \${${d.name}:-default} for an optional value)`,
      });
  const problems = [...envProblems];
  const portProblem = envPort(env).problem;
  if (portProblem) problems.push(portProblem);
  if (!parsed.success) {
    // A key whose variable is missing already has its error; what the empty value then fails is noise.
    const envPaths = envProblems.map((p) => p.path);
    const under = (path: string): boolean =>
      envPaths.some((e) => path === e || path.startsWith(`${e}.`) || path.startsWith(`${e}[`));
    problems.push(
      ...issuesToProblems(parsed.error.issues, substituted, configSchema).filter((p) => !under(p.path)),
    );
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(file, sortBySource(problems, doc));
  const baseDir = dirname(file);
  const config = applyEnvOverrides(resolvePaths(parsed.data, baseDir), env);
  return { config, file, baseDir, unresolvedEnv: deferred.filter((d) => !failing(d.path)) };
}

/**
 * Orders problems as their keys appear in the file, so `config check` reads top to bottom. A problem
 * about a missing key sorts at its parent; problems without a path (file-level) come first.
 */
function sortBySource(problems: ConfigProblem[], doc: Document): ConfigProblem[] {
  const offsets = new Map<string, number>();
  const walk = (node: unknown, path: string): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const sub = path ? `${path}.${key}` : key;
        offsets.set(sub, (pair.key as Node | null)?.range?.[0] ?? 0);
        walk(pair.value, sub);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        const sub = `${path}[${i}]`;
        offsets.set(sub, (item as Node | null)?.range?.[0] ?? 0);
        walk(item, sub);
      });
    }
  };
  walk(doc.contents, "");
  const offsetOf = (path: string): number => {
    for (let p = path; p; p = p.replace(/(\.[^.[\]]*|\[\d+\])$/, "")) {
      const o = offsets.get(p);
      if (o !== undefined) return o;
      if (!/(\.[^.[\]]*|\[\d+\])$/.test(p)) break;
    }
    return -1;
  };
  return problems
    .map((p, i) => ({ p, i, o: offsetOf(p.path) }))
    .sort((a, b) => a.o - b.o || a.i - b.i)
    .map((x) => x.p);
}

const VAR_RE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces `${VAR}` and `${VAR:-default}` in every string value; records missing variables. */
export function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: (string | number)[],
  problems: ConfigProblem[],
  /** Collects the paths of values that were exactly one `${VAR}` reference (candidates for coercion). */
  wholeRefs?: (string | number)[][],
  /** When given, a missing variable is collected here (its reference left as is) instead of a problem. */
  deferred?: UnresolvedEnv[],
): unknown {
  if (typeof value === "string") {
    if (wholeRefs && WHOLE_RE.test(value)) wholeRefs.push(path);
    return value.replace(VAR_RE, (m, name: string, def: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== "") return v;
      if (def !== undefined) return def;
      const at = path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${p}` : p)).join("");
      if (deferred) {
        deferred.push({ path: at, name });
        return m;
      }
      problems.push({
        path: at,
        message: `environment variable ${name} is not set (use \${${name}:-default} for an optional value)`,
      });
      return "";
    });
  }
  if (Array.isArray(value))
    return value.map((v, i) => substituteEnv(v, env, [...path, i], problems, wholeRefs, deferred));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = substituteEnv(v, env, [...path, k], problems, wholeRefs, deferred);
    return out;
  }
  return value;
}

const WHOLE_RE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/**
 * Returns a copy where every whole-reference string that failed a number/boolean type check is
 * converted, when it reads as one ("8080", "true"). Returns the same object when nothing changed.
 */
function coerceSubstituted(
  root: unknown,
  issues: readonly { code: string; path: PropertyKey[]; expected?: string }[],
  wholeRefs: (string | number)[][],
): unknown {
  const keyOf = (p: readonly PropertyKey[]): string => JSON.stringify(p.map(String));
  const refs = new Set(wholeRefs.map(keyOf));
  let out = root;
  for (const issue of issues) {
    if (issue.code !== "invalid_type" || !refs.has(keyOf(issue.path))) continue;
    const cur = getAt(out, issue.path);
    if (typeof cur !== "string") continue;
    let v: unknown;
    if ((issue.expected === "number" || issue.expected === "int") && /^-?\d+(\.\d+)?$/.test(cur.trim()))
      v = Number(cur);
    else if (issue.expected === "boolean" && /^(true|false)$/i.test(cur.trim()))
      v = cur.trim().toLowerCase() === "true";
    else continue;
    out = setAt(out, issue.path, v);
  }
  return out;
}

function getAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const p of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function setAt(root: unknown, path: readonly PropertyKey[], value: unknown): unknown {
  const [head, ...rest] = path;
  if (head === undefined) return value;
  const copy: Record<PropertyKey, unknown> | unknown[] = Array.isArray(root)
    ? [...(root as unknown[])]
    : { ...(root as Record<PropertyKey, unknown>) };
  (copy as Record<PropertyKey, unknown>)[head] = setAt(
    (root as Record<PropertyKey, unknown>)[head],
    rest,
    value,
  );
  return copy;
}

function resolvePaths(config: Config, baseDir: string): Config {
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  return { ...config, data_dir: abs(config.data_dir), workspace: abs(config.workspace) };
}

/** Validates an in-memory object (tests, API). Paths resolve against `baseDir`. */
export function configFromObject(obj: unknown, baseDir = process.cwd()): Config {
  const parsed = configSchema.safeParse(obj, ONCE);
  if (!parsed.success)
    throw new ConfigError("<object>", issuesToProblems(parsed.error.issues, obj, configSchema));
  return resolvePaths(parsed.data, baseDir);
}
