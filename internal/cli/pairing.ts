/**
 * `familiar pairing list [--channel C] [--json]` and `familiar pairing approve <code> [--channel C]`
 * (and `revoke <userId> --channel C`): the owner's side of the pairing flow. Reads and writes the
 * SQLite database in `data_dir` directly, so it works whether or not the daemon runs (WAL + busy
 * timeout let both write); the running channel sees an approval on the user's next message.
 */
import { loadConfigFile } from "../config/load.js";
import { systemClock } from "../core/clock.js";
import { openDatabase, type Db } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { PairingStore } from "../channels/common/pairing.js";
import { safeLine } from "./terminal-text.js";
import { localTime } from "./cli-format.js";

export interface PairingOptions {
  config: string;
  channel?: string;
  json?: boolean;
  /** Output sink (tests). */
  out?: (line: string) => void;
}

async function withStore<T>(configPath: string, fn: (store: PairingStore) => T): Promise<T> {
  const { config } = loadConfigFile(configPath, process.env, { deferSecrets: true });
  let db: Db | undefined;
  try {
    db = openDatabase(config.data_dir, { migrations: allMigrations });
    return fn(new PairingStore(db, systemClock));
  } finally {
    db?.close();
  }
}

const when = (ms: number): string => localTime(ms);

/** Lists pending pairing requests and approved users. */
export async function pairingList(opts: PairingOptions): Promise<void> {
  const out = opts.out ?? ((l: string) => console.log(l));
  await withStore(opts.config, (store) => {
    const pending = store.pending(opts.channel);
    const allowed = store.allowed(opts.channel);
    if (opts.json) {
      out(JSON.stringify({ pending, allowed }, null, 2));
      return;
    }
    out(pending.length ? "Pending requests:" : "No pending pairing requests.");
    for (const p of pending)
      out(
        `  ${p.code}  ${p.channel}  user ${safeLine(p.userId)}${p.userName ? ` (${safeLine(p.userName)})` : ""}  expires ${when(p.expiresAt)}`,
      );
    out(allowed.length ? "Approved users:" : "No approved users (besides allow_from in config.yaml).");
    for (const a of allowed)
      out(
        `  ${a.channel}  user ${safeLine(a.userId)}${a.userName ? ` (${safeLine(a.userName)})` : ""}  since ${when(a.approvedAt)}`,
      );
  });
}

/** Approves a code. Exits with code 1 when the code is unknown or expired. */
export async function pairingApprove(code: string, opts: PairingOptions): Promise<boolean> {
  const out = opts.out ?? ((l: string) => console.log(l));
  return withStore(opts.config, (store) => {
    const r = store.approve(code, opts.channel);
    if (!r) {
      out(
        `No pending pairing request with code ${code.toUpperCase()}${opts.channel ? ` on ${opts.channel}` : ""} (codes expire after 1 hour; see \`familiar pairing list\`).`,
      );
      process.exitCode = 1;
      return false;
    }
    out(
      `Approved ${r.channel} user ${safeLine(r.userId)}${r.userName ? ` (${safeLine(r.userName)})` : ""}. They can talk to the assistant now.`,
    );
    return true;
  });
}

/** Removes a user from the stored allow list. */
export async function pairingRevoke(
  userId: string,
  opts: PairingOptions & { channel: string },
): Promise<boolean> {
  const out = opts.out ?? ((l: string) => console.log(l));
  return withStore(opts.config, (store) => {
    const ok = store.revoke(opts.channel, userId);
    out(
      ok
        ? `Revoked ${opts.channel} user ${safeLine(userId)}.`
        : `User ${safeLine(userId)} was not on the stored ${opts.channel} allow list.`,
    );
    if (!ok) process.exitCode = 1;
    return ok;
  });
}
