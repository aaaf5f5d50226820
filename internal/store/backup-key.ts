/**
 * The key that tells this installation's own backups from anyone else's.
 *
 * A backup is signed with HMAC-SHA256 over its `manifest.json` bytes (which hold every file's sha256)
 * and the signature written beside it as `manifest.sig`. The key is `<data_dir>/backup.key` (32
 * random bytes, hex, mode 0600): it stays OUTSIDE every backup (a backup holds the database, the
 * workspace and config.yaml, never other files of the data dir), and outside the workspace, so
 * neither a backup's holder nor the sandbox can sign one.
 *
 * Invariants:
 * - only a signature made with the local key counts: unsigned, signed with another key, or tampered
 *   after signing (a changed row with a recomputed manifest) are all "not ours" ({@link SignatureCheck});
 * - the key file is created exclusively, opened without following a link, and must be a regular
 *   file of this user not readable by others; anything else is refused (fail closed: no key, so no
 *   backup is taken for "ours").
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { BackupError } from "./backup-error.js";

/** The signature's file name inside a backup. */
export const MANIFEST_SIG = "manifest.sig";
/** The key's file name inside the data dir. */
export const BACKUP_KEY = "backup.key";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const PREFIX = "hmac-sha256:";

/** Whose backup this is, as its signature says. */
export type SignatureCheck = "own" | "unsigned" | "foreign";

/** Reads `<dataDir>/backup.key`; undefined when there is none. Throws BackupError when it is unsafe. */
export function readBackupKey(dataDir: string): Buffer | undefined {
  const file = join(dataDir, BACKUP_KEY);
  let fd: number;
  try {
    fd = openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    throw new BackupError(
      "BACKUP_UNSAFE",
      `${file}: cannot open it without following a link (${code ?? "error"})`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new BackupError("BACKUP_UNSAFE", `${file} is not a regular file`);
    if ((st.mode & 0o077) !== 0 || (process.getuid && st.uid !== process.getuid()))
      throw new BackupError("BACKUP_UNSAFE", `${file} must be yours and mode 0600 (chmod 600 ${file})`);
    const buf = Buffer.alloc(256);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const hex = buf.subarray(0, n).toString("utf8").trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new BackupError("BACKUP_UNSAFE", `${file} is not a backup key`);
    return Buffer.from(hex, "hex");
  } finally {
    closeSync(fd);
  }
}

/** The local key, made (0600, exclusively) when this data dir has none yet. */
export function ensureBackupKey(dataDir: string): Buffer {
  const have = readBackupKey(dataDir);
  if (have) return have;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  let fd: number;
  try {
    fd = openSync(join(dataDir, BACKUP_KEY), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  } catch (err) {
    // Another process made it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      const k = readBackupKey(dataDir);
      if (k) return k;
    }
    throw err;
  }
  try {
    writeSync(fd, `${key.toString("hex")}\n`);
  } finally {
    closeSync(fd);
  }
  return key;
}

/** The text of `manifest.sig` for these manifest bytes. */
export function signManifest(key: Buffer, manifest: Buffer): string {
  return `${PREFIX}${createHmac("sha256", key).update(manifest).digest("hex")}\n`;
}

/**
 * Checks `manifest.sig` (its text, or undefined when the backup has none) against the manifest bytes
 * and the local key (undefined when this installation has none: nothing is "own" then).
 */
export function checkSignature(
  manifest: Buffer,
  sig: string | undefined,
  key: Buffer | undefined,
): SignatureCheck {
  if (sig === undefined) return "unsigned";
  if (!key) return "foreign";
  const want = Buffer.from(signManifest(key, manifest).trim(), "utf8");
  const got = Buffer.from(sig.trim(), "utf8");
  return got.length === want.length && timingSafeEqual(got, want) ? "own" : "foreign";
}
