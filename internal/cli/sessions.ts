/**
 * `familiar sessions list|lineage|compact`: sessions and their compaction lineage.
 *
 * `list` and `lineage` open `<data_dir>/familiar.db` read-only (safe while the daemon runs: WAL lets a
 * reader and the writer proceed together); `compact` asks the running daemon over its gateway, since
 * compaction calls the model.
 */
import { safeLine } from "./terminal-text.js";
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import type { Db } from "../store/db.js";
import { lineage, type Lineage, type LineageEntry } from "../agent/compaction/lineage.js";
import { GatewayClient, GatewayClientError } from "../gateway/client.js";
import { connectAsOwner } from "./owner-client.js";
import type { TaintSource } from "../core/taint.js";
import { taintOfSessions } from "../tools/taint/taint-store.js";
import { formatTable, localTime } from "./cli-format.js";

/** A session row as `sessions list` prints it. */
export interface SessionListEntry {
  sessionKey: string;
  sessionId: string;
  agentId: string;
  messageCount: number;
  createdAt: number;
  updatedAt: number;
  archived: boolean;
  /** Where untrusted text entered the session (containment); empty when clean. */
  taint: TaintSource[];
}

/** Runs `fn` on a read-only connection to the configured database; undefined when it does not exist yet. */
export function withDb<T>(configPath: string, fn: (db: Db) => T): T | undefined {
  const { config } = loadConfigFile(configPath, process.env, { deferSecrets: true });
  const file = join(config.data_dir, "familiar.db");
  if (!existsSync(file)) return undefined;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    return fn(db);
  } finally {
    db.close();
  }
}

/** Sessions whose key starts with `prefix`, most recently updated first. Archived ones only with `all`. */
export function listSessions(db: Db, prefix = "", limit = 50, all = false): SessionListEntry[] {
  const like = prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
  const rows = db
    .prepare<
      [string, number],
      {
        id: string;
        key: string;
        agent_id: string;
        created_at: number;
        updated_at: number;
        archived_at: number | null;
        n: number;
      }
    >(
      `SELECT s.id, s.key, s.agent_id, s.created_at, s.updated_at, s.archived_at,
         (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n
       FROM sessions s WHERE s.key LIKE ? ESCAPE '\\' ${all ? "" : "AND s.archived_at IS NULL AND s.successor_id IS NULL"}
       ORDER BY s.updated_at DESC LIMIT ?`,
    )
    .all(like, limit);
  const taint = taintOfSessions(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({
    sessionKey: r.key,
    sessionId: r.id,
    agentId: r.agent_id,
    messageCount: r.n,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    archived: r.archived_at !== null,
    taint: taint.get(r.id) ?? [],
  }));
}

/** Resolves a session id, or a session key to its newest session. */
export function resolveSessionRef(db: Db, ref: string): string | undefined {
  const byId = db.prepare<[string], { id: string }>("SELECT id FROM sessions WHERE id = ?").get(ref);
  if (byId) return byId.id;
  const byKey = db
    .prepare<[string], { id: string }>(
      "SELECT id FROM sessions WHERE key = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
    )
    .get(ref);
  return byKey?.id;
}

const time = (ms: number | null): string => localTime(ms);

function entryLine(e: LineageEntry, marker: string): string {
  return `${marker} ${e.id}  ${e.messageCount} messages  created ${time(e.createdAt)}${e.archivedAt ? `  archived ${time(e.archivedAt)}` : "  (live)"}`;
}

/** Renders a lineage oldest first, the asked-for session marked. */
export function formatLineage(l: Lineage): string {
  const lines = [`session key ${l.session.key} (agent ${l.session.agentId})`];
  for (const e of [...l.backward].reverse()) lines.push(entryLine(e, " "));
  lines.push(entryLine(l.session, "*"));
  for (const e of l.forward) lines.push(entryLine(e, " "));
  if (l.summaries.length) {
    lines.push("", "summaries:");
    for (const s of l.summaries)
      lines.push(
        `  ${time(s.createdAt)}  ${s.sourceSessionId ?? "?"} -> ${s.successorSessionId ?? "?"}  ${s.messagesSummarised} messages, ${s.tokensBefore} -> ${s.tokensAfter} tokens (${s.level})`,
      );
  }
  return lines.join("\n") + "\n";
}

/** `familiar sessions list`. */
export function sessionsListCommand(
  opts: { config: string; prefix?: string; limit?: string; all?: boolean; json?: boolean },
  out: NodeJS.WritableStream = process.stdout,
): void {
  const limit = Math.max(1, Math.min(1000, Number(opts.limit ?? 50) || 50));
  const rows = withDb(opts.config, (db) => listSessions(db, opts.prefix ?? "", limit, opts.all)) ?? [];
  if (opts.json) {
    out.write(JSON.stringify(rows, null, 2) + "\n");
    return;
  }
  if (rows.length === 0) {
    out.write("no sessions\n");
    return;
  }
  // The live session of a key is its newest one that is not archived; after a /new an older session
  // of the same key may still be listed: it is marked, so the two are told apart.
  const seen = new Set<string>();
  const state = (r: SessionListEntry): string => {
    if (r.archived) return "archived";
    if (seen.has(r.sessionKey)) return "earlier";
    seen.add(r.sessionKey);
    return "live";
  };
  const table = formatTable(
    ["SESSION KEY", "SESSION ID", "AGENT", "MESSAGES", "UPDATED", "STATE", "TAINT"],
    rows.map((r) => [
      safeLine(r.sessionKey),
      r.sessionId,
      safeLine(r.agentId),
      String(r.messageCount),
      time(r.updatedAt),
      state(r),
      r.taint.length
        ? `TAINTED (${r.taint.length} source${r.taint.length === 1 ? "" : "s"}: ${r.taint[r.taint.length - 1]?.kind})`
        : "-",
    ]),
  );
  out.write(table.join("\n") + "\n");
}

/** `familiar sessions lineage <id|key>`; exit code 1 when the session does not exist. */
export function sessionsLineageCommand(
  ref: string,
  opts: { config: string; json?: boolean },
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): number {
  const l = withDb(opts.config, (db) => {
    const id = resolveSessionRef(db, ref);
    return id ? lineage(db, id) : undefined;
  });
  if (!l) {
    err.write(`familiar sessions lineage: no session with id or key "${ref}"\n`);
    return 1;
  }
  out.write(opts.json ? JSON.stringify(l, null, 2) + "\n" : formatLineage(l));
  return 0;
}

/** `familiar sessions compact <key> [instructions]` over the gateway. */
export async function sessionsCompactCommand(
  sessionKey: string,
  instructions: string | undefined,
  opts: { config: string; url?: string; token?: string; json?: boolean },
): Promise<number> {
  let client: GatewayClient;
  try {
    client = await connectAsOwner(opts, "familiar-cli");
  } catch (e) {
    process.stderr.write(`familiar sessions compact: ${(e as GatewayClientError).message}\n`);
    return 1;
  }
  try {
    const r = await client.request<{ summary: string; tokensBefore: number; tokensAfter: number }>(
      "sessions.compact",
      { sessionKey, ...(instructions ? { instructions } : {}) },
    );
    process.stdout.write(
      opts.json
        ? JSON.stringify(r, null, 2) + "\n"
        : `compacted ${sessionKey}: ${r.tokensBefore} -> ${r.tokensAfter} tokens\n`,
    );
    return 0;
  } catch (e) {
    process.stderr.write(`familiar sessions compact: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await client.close();
  }
}
