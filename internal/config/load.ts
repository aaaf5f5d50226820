/**
 * Loading: read YAML, substitute `${VAR}` / `${VAR:-default}` from the environment, validate with zod,
 * resolve relative paths against the config file's directory.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseDocument } from "yaml";
import { configSchema, type Config } from "./schema.js";
import { ConfigError, issuesToProblems, type ConfigProblem } from "./errors.js";

/** A loaded config plus where it came from. */
export interface LoadedConfig {
  config: Config;
  file: string;
  /** Directory that relative paths in the config are resolved against. */
  baseDir: string;
}

/** Reads and validates a config file. Throws {@link ConfigError} listing every problem. */
export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, "utf8");
  } catch (err) {
    throw new ConfigError(abs, [{ path: "", message: `cannot read config file: ${(err as Error).message}` }]);
  }
  return parseConfigText(text, abs, env);
}

/** Parses config text (already read). Exposed for tests and `config check`. */
export function parseConfigText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): LoadedConfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({
        path: "",
        message: `YAML syntax error: ${e.message.split("\n")[0] ?? e.message}`,
      })),
    );
  }
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(file, [
      { path: "", message: `expected a mapping at the top level, got ${typeof raw}` },
    ]);
  }
  const envProblems: ConfigProblem[] = [];
  const substituted = substituteEnv(raw, env, [], envProblems);
  const parsed = configSchema.safeParse(substituted);
  const problems = [...envProblems];
  if (!parsed.success) problems.push(...issuesToProblems(parsed.error.issues, substituted));
  if (problems.length > 0 || !parsed.success) throw new ConfigError(file, problems);
  const baseDir = dirname(file);
  const config = resolvePaths(parsed.data, baseDir);
  return { config, file, baseDir };
}

const VAR_RE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces `${VAR}` and `${VAR:-default}` in every string value; records missing variables. */
export function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path: (string | number)[],
  problems: ConfigProblem[],
): unknown {
  if (typeof value === "string") {
    return value.replace(VAR_RE, (_m, name: string, def: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== "") return v;
      if (def !== undefined) return def;
      problems.push({
        path: path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${p}` : p)).join(""),
        message: `environment variable ${name} is not set (use \${${name}:-default} for an optional value)`,
      });
      return "";
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, i], problems));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, [...path, k], problems);
    return out;
  }
  return value;
}

function resolvePaths(config: Config, baseDir: string): Config {
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  return { ...config, data_dir: abs(config.data_dir), workspace: abs(config.workspace) };
}

/** Validates an in-memory object (tests, API). Paths resolve against `baseDir`. */
export function configFromObject(obj: unknown, baseDir = process.cwd()): Config {
  const parsed = configSchema.safeParse(obj);
  if (!parsed.success) throw new ConfigError("<object>", issuesToProblems(parsed.error.issues, obj));
  return resolvePaths(parsed.data, baseDir);
}
