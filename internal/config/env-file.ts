/**
 * The owner's environment file (issue 47): `.env` beside `config.yaml`, and `<data_dir>/.env`, fill
 * in `${VAR}` references, so adding a provider key or a bot token is an edit the daemon picks up on
 * its next reload, not a restart with a variable in the shell.
 *
 * Invariants:
 * - a file is read only when it is a regular file owned by the user (or root) that neither group nor
 *   others may read or write (mode 0600 or stricter); otherwise loading fails with an
 *   {@link EnvFileError} naming the file, its owner or mode, and the fix;
 * - the process environment wins over both files (as dotenv, docker compose and systemd do), and
 *   the file beside config.yaml wins over the data dir's;
 * - the variables fill in the config only: they never enter `process.env`, so no child process (a
 *   sandboxed command, a CLI engine, an MCP server) inherits them.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

/** The file name looked for in both places. */
export const ENV_FILE = ".env";

/** An environment file the loader refuses to read. */
export class EnvFileError extends Error {
  readonly code = "ENV_FILE_UNSAFE";
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
    this.name = "EnvFileError";
  }
}

/** The candidate files for a config file and its data dir, in order of precedence. */
export function envFileCandidates(configFile: string, dataDir: string | undefined): string[] {
  const beside = join(dirname(configFile), ENV_FILE);
  const inData = dataDir ? join(dataDir, ENV_FILE) : undefined;
  return inData && inData !== beside ? [beside, inData] : [beside];
}

/**
 * Parses dotenv text: `KEY=value`, `export KEY=value`, `#` comments, single quotes (literal) and
 * double quotes (with `\n`, `\"`, `\\`). An unquoted value ends at ` #`. Malformed lines are
 * reported by line number, never with their text (it may hold a secret).
 */
export function parseEnvText(text: string, file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new EnvFileError(file, `${file}:${i + 1}: expected KEY=value`);
    const key = m[1]!;
    let value = m[2]!;
    if (value.startsWith("'")) {
      const end = value.indexOf("'", 1);
      if (end < 0) throw new EnvFileError(file, `${file}:${i + 1}: unclosed single quote`);
      value = value.slice(1, end);
    } else if (value.startsWith('"')) {
      const m2 = /^"((?:[^"\\]|\\.)*)"/.exec(value);
      if (!m2) throw new EnvFileError(file, `${file}:${i + 1}: unclosed double quote`);
      value = m2[1]!.replace(/\\(.)/g, (_s, c: string) => (c === "n" ? "\n" : c));
    } else {
      value = value.replace(/\s+#.*$/, "").trim();
    }
    out[key] = value;
  });
  return out;
}

/** Reads one env file after the ownership and mode checks; undefined when it does not exist. */
export function readEnvFile(file: string): Record<string, string> | undefined {
  let st;
  try {
    st = statSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new EnvFileError(file, `${file}: cannot read it: ${(err as Error).message}`);
  }
  if (!st.isFile()) throw new EnvFileError(file, `${file}: not a regular file`);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  if (uid !== undefined && st.uid !== uid && st.uid !== 0)
    throw new EnvFileError(
      file,
      `${file}: refused: owned by uid ${st.uid}, not by you (uid ${uid}); it holds secrets, so it must be yours`,
    );
  if ((st.mode & 0o077) !== 0) {
    const mode = `0${(st.mode & 0o777).toString(8).padStart(3, "0")}`;
    throw new EnvFileError(
      file,
      `${file}: refused: group or others can read or write it (mode ${mode}); run chmod 600 ${file}`,
    );
  }
  return parseEnvText(readFileSync(file, "utf8"), file);
}

/**
 * The environment a config is resolved with: the files' variables under `env` (the process wins),
 * and which files were read.
 */
export function withEnvFiles(
  configFile: string,
  dataDir: string | undefined,
  env: NodeJS.ProcessEnv,
): { env: NodeJS.ProcessEnv; files: string[] } {
  const merged: NodeJS.ProcessEnv = {};
  const files: string[] = [];
  // Lowest precedence first: the data dir's file, then the one beside config.yaml, then the process.
  for (const file of envFileCandidates(configFile, dataDir).reverse()) {
    const vars = readEnvFile(file);
    if (!vars) continue;
    files.unshift(file);
    Object.assign(merged, vars);
  }
  if (files.length === 0) return { env, files };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== "") merged[k] = v;
  return { env: merged, files };
}
