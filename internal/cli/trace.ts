/**
 * `familiar trace <requestId> [--json] [--config PATH] [--url URL [--token T]]`: the call tree of one
 * user message (every turn, model call and tool call with parent links, depth, usage and cost).
 *
 * By default it opens `<data_dir>/familiar.db` read-only (safe while the daemon runs, nothing is
 * migrated); with `--url` it asks a running gateway's `GET /api/traces/{id}` instead (for a daemon
 * on another machine or whose database you cannot read).
 */
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { resolveGatewayTarget } from "../gateway/target.js";
import { formatTraceReport, readTraceReport, type TraceReport } from "../agent/trace-report.js";

export interface TraceCommandOptions {
  config: string;
  json?: boolean;
  /** Gateway base URL (http://host:port); reads the database directly when absent. */
  url?: string;
  token?: string;
}

/** A failure the command reports on stderr with exit code 1. */
export class TraceCommandError extends Error {
  constructor(
    readonly code: "TRACE_NOT_FOUND" | "GATEWAY_ERROR",
    message: string,
  ) {
    super(message);
    this.name = "TraceCommandError";
  }
}

async function viaGateway(opts: TraceCommandOptions, url: string, requestId: string): Promise<TraceReport> {
  // The token the other commands use: flag, env, the running daemon's card, the config, the data dir.
  const { token } = resolveGatewayTarget({ config: opts.config, url, token: opts.token });
  const base = url.replace(/^ws/, "http").replace(/\/(ws)?\/?$/, "");
  const res = await fetch(`${base}/api/traces/${encodeURIComponent(requestId)}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  }).catch((err: unknown) => {
    throw new TraceCommandError(
      "GATEWAY_ERROR",
      `cannot reach the gateway at ${base}: ${(err as Error).message}`,
    );
  });
  const body = (await res.json().catch(() => ({}))) as TraceReport & {
    error?: { code: string; message: string };
  };
  if (res.status === 404) throw new TraceCommandError("TRACE_NOT_FOUND", `no trace for request ${requestId}`);
  if (!res.ok)
    throw new TraceCommandError(
      "GATEWAY_ERROR",
      `gateway answered ${res.status}: ${body.error?.message ?? res.statusText}`,
    );
  return body;
}

function fromStore(opts: TraceCommandOptions, requestId: string): TraceReport {
  const { config } = loadConfigFile(opts.config, process.env, { deferSecrets: true });
  const file = join(config.data_dir, "familiar.db");
  if (!existsSync(file)) throw new TraceCommandError("TRACE_NOT_FOUND", `no database at ${file}`);
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    const report = readTraceReport(db, requestId, config);
    if (!report)
      throw new TraceCommandError("TRACE_NOT_FOUND", `no trace for request ${requestId} in ${file}`);
    return report;
  } finally {
    db.close();
  }
}

/** Runs the command; writes the report to `out`. Throws TraceCommandError on failure. */
export async function traceCommand(
  requestId: string,
  opts: TraceCommandOptions,
  out: NodeJS.WritableStream = process.stdout,
): Promise<TraceReport> {
  const url = opts.url ?? (process.env.FAMILIAR_GATEWAY_URL || undefined);
  const report =
    opts.url !== undefined && url ? await viaGateway(opts, url, requestId) : fromStore(opts, requestId);
  out.write(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatTraceReport(report));
  return report;
}
