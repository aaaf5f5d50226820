/**
 * The generated gateway token: with no `gateway.token` in the config, the daemon creates a random
 * token (256 bits, base64url) at first start in `<data_dir>/gateway-token`, readable only by the
 * owner (mode 0600), and reuses it on every later start. The CLI reads the same file, so nothing
 * changes for the owner on the command line, while every other local process or web page needs it.
 *
 * Invariants:
 * - the file is created with `O_EXCL` and mode 0600 in one step, so it is never readable by others,
 *   not even for a moment, and two starts racing cannot write two different tokens;
 * - a file with a wider mode is narrowed to 0600 (and reported), never silently trusted as is;
 * - a file holding fewer than 128 bits of token is refused (replaced) rather than used.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

/** File name of the generated token inside the data dir. */
export const TOKEN_FILE = "gateway-token";

/** Minimum length of a usable token file's content (22 base64url chars = 132 bits). */
const MIN_TOKEN_CHARS = 22;

export interface GeneratedToken {
  token: string;
  file: string;
  /** True when this call created the file. */
  created: boolean;
  /** Set when an existing file's mode was wider than 0600 and has been narrowed. */
  narrowedFrom?: string;
}

/** Path of the generated token file for `dataDir`. */
export function tokenFilePath(dataDir: string): string {
  return join(dataDir, TOKEN_FILE);
}

/** Reads the token file, or undefined when it is missing, unreadable or too short. */
export function readTokenFile(file: string): string | undefined {
  try {
    const t = readFileSync(file, "utf8").trim();
    return t.length >= MIN_TOKEN_CHARS ? t : undefined;
  } catch {
    return undefined;
  }
}

/** Returns the data dir's generated token, creating it (0600, 256 random bits) when absent. */
export function ensureGatewayToken(dataDir: string): GeneratedToken {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = tokenFilePath(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    const existing = readTokenFile(file);
    if (existing !== undefined) {
      const mode = statSync(file).mode & 0o777;
      if (mode & 0o077) {
        chmodSync(file, 0o600);
        return { token: existing, file, created: false, narrowedFrom: mode.toString(8).padStart(4, "0") };
      }
      return { token: existing, file, created: false };
    }
    const token = randomBytes(32).toString("base64url");
    let fd: number;
    try {
      // A short or empty leftover is replaced: writing to a temp name would leave a window where
      // two daemons disagree, so the bad file is rewritten in place under its 0600 mode.
      fd = openSync(file, existsFlag(file), 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") continue; // another start won the race
      throw err;
    }
    try {
      chmodSync(file, 0o600);
      writeSync(fd, `${token}\n`);
    } finally {
      closeSync(fd);
    }
    return { token, file, created: true };
  }
  throw new Error(`could not create or read the gateway token file ${file}`);
}

/** `wx` for a new file (exclusive create), `w` to rewrite a present but unusable one. */
function existsFlag(file: string): string {
  try {
    statSync(file);
    return "w";
  } catch {
    return "wx";
  }
}
