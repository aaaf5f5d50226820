/**
 * Websocket methods the owner's console needs beyond the chat and admin sets (docs/gateway-protocol.md):
 * system.info, usage.daily, usage.sessions, sessions.search, sessions.model, pairing.revoke,
 * cron.pause / cron.resume, heartbeat.runs, memory.entries (approvals.* are methods-approvals.ts'). Like every method
 * they are reachable only after an authenticated `connect`; nothing here is a console-only back door (the CLI may use them too).
 */
import type { PairingStore } from "../channels/common/pairing.js";
import { resolve } from "node:path";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { MemoryEditError, editMemoryEntry, memoryEntries } from "./memory-entries.js";
import { MethodError, type Params } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import { dailyUsage, topSessions } from "./usage-report.js";
import { ExportFormatError, parseExport } from "../agent/usage/provider-export.js";
import { reconcile } from "../agent/usage/reconcile.js";

/** The largest export the console may send (a month of OpenRouter generations fits well below). */
const MAX_EXPORT_CHARS = 20_000_000;
import type { MethodHandler } from "./ws-server.js";

/** A session row of `sessions.search`. */
interface SearchRow {
  key: string;
  id: string;
  agent_id: string;
  created_at: number;
  updated_at: number;
  model_override: string | null;
  parent_id: string | null;
  message_count: number;
  title: string | null;
}

const DAY_MS = 86_400_000;

/** The package version, read once on first ask (never at start). */
let versionCache: string | undefined;
async function packageVersion(): Promise<string> {
  if (versionCache) return versionCache;
  try {
    const { packageRoot } = await import("../config/package-root.js");
    const { readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const pkg = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version?: string };
    versionCache = pkg.version ?? "unknown";
  } catch {
    versionCache = "unknown";
  }
  return versionCache;
}

/** The long-term memory index: note files and their bytes (null when memory is not set up). */
function memoryNotes(rt: GatewayRuntime): { files: number; bytes: number } | null {
  try {
    const r = rt.ctx.db
      .prepare<[], { files: number; bytes: number }>(
        "SELECT COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM memory_files",
      )
      .get();
    return r ?? null;
  } catch {
    return null;
  }
}

/** `line`, required: the entry's first line in its file. */
function needLine(p: Params): number {
  const line = p.optInt("line", 1, 1_000_000);
  if (line === undefined)
    throw new MethodError("invalid_params", "line is required (the entry's line, from memory.entries)");
  return line;
}

/** One owner edit of a memory entry, with its refusals as method errors. */
function memoryEdit(
  rt: GatewayRuntime,
  file: string,
  line: number,
  text: string,
  replacement: string | null,
) {
  try {
    editMemoryEntry(resolve(rt.ctx.config().workspace), { file, line, text, replacement });
  } catch (err) {
    if (err instanceof MemoryEditError) throw new MethodError(err.code, err.message);
    if (isWorkspaceError(err)) throw new MethodError("forbidden", `${file}: ${err.message}`);
    throw err;
  }
  rt.ctx.logger.info(
    { file, line, forgot: replacement === null },
    "memory entry changed by the owner over the gateway",
  );
  return { ok: true };
}

export function consoleMethods(
  rt: GatewayRuntime,
  pairing: () => Promise<PairingStore>,
): [string, MethodHandler][] {
  const search: MethodHandler = (p) => {
    const query = (p.optStr("query") ?? "").trim();
    const limit = p.optInt("limit", 1, 200) ?? 25;
    const offset = p.optInt("offset", 0, 1_000_000) ?? 0;
    const agent = p.optStr("agent");
    const like = `%${query.replace(/[\\%_]/g, (c) => "\\" + c)}%`;
    // Live sessions (the head of each key); the title is the first user message, as the web chat shows.
    const where = `FROM session_heads h JOIN sessions s ON s.id = h.session_id
      WHERE (? = '' OR s.key LIKE ? ESCAPE '\\' OR s.agent_id LIKE ? ESCAPE '\\'
             OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.role IN ('user','assistant')
                        AND m.content LIKE ? ESCAPE '\\'))
        AND (? IS NULL OR s.agent_id = ?)`;
    const args: [string, string, string, string, string | null, string | null] = [
      query,
      like,
      like,
      like,
      agent ?? null,
      agent ?? null,
    ];
    const total = rt.ctx.db.prepare<typeof args, { n: number }>(`SELECT COUNT(*) AS n ${where}`).get(...args);
    const rows = rt.ctx.db
      .prepare<[...typeof args, number, number], SearchRow>(
        `SELECT s.key, s.id, s.agent_id, s.created_at, s.updated_at, s.model_override, s.parent_id,
                (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
                (SELECT substr(m.content, 1, 120) FROM messages m WHERE m.session_id = s.id AND m.role = 'user'
                  ORDER BY m.id LIMIT 1) AS title
         ${where} ORDER BY s.updated_at DESC, s.id DESC LIMIT ? OFFSET ?`,
      )
      .all(...args, limit, offset);
    return {
      total: total?.n ?? 0,
      offset,
      sessions: rows.map((r) => ({
        sessionKey: r.key,
        sessionId: r.id,
        agentId: r.agent_id,
        title: r.title,
        messageCount: r.message_count,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        modelOverride: r.model_override,
        parentId: r.parent_id,
      })),
    };
  };

  const toggle =
    (enabled: boolean): MethodHandler =>
    (p) => {
      const id = p.str("id");
      const cron = rt.deps.cron;
      if (!cron) throw new MethodError("unavailable", "the cron scheduler is not running");
      try {
        return { job: cron.setEnabled(id, enabled) };
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code === "CRON_NOT_FOUND") throw new MethodError("not_found", (err as Error).message);
        if (code === "CRON_CONFIG_JOB") throw new MethodError("forbidden", (err as Error).message);
        throw err;
      }
    };

  return [
    [
      "system.info",
      async () => {
        const m = process.memoryUsage();
        return {
          version: await packageVersion(),
          node: process.version,
          pid: process.pid,
          uptimeS: Math.round((Date.now() - rt.ctx.startedAt) / 1000),
          memory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external },
          queueDepth: rt.maybeHost()?.queueDepth() ?? null,
          configFile: rt.deps.config.file,
          configError: rt.deps.config.error() ?? null,
          pendingRestart: rt.deps.config.pendingRestart(),
          notes: memoryNotes(rt),
        };
      },
    ],
    [
      "usage.daily",
      (p) => {
        const days = p.optInt("days", 1, 366) ?? 30;
        const cfg = rt.ctx.config();
        return dailyUsage(rt.ctx.db, rt.ctx.clock.now(), days, cfg.timezone, cfg.budgets.default_price);
      },
    ],
    [
      // The ledger beside a provider's usage export the owner picked in the console (CSV text).
      "usage.reconcile",
      (p) => {
        const text = p.str("text");
        if (text.length > MAX_EXPORT_CHARS)
          throw new MethodError(
            "invalid_params",
            `params.text: expected at most ${MAX_EXPORT_CHARS} characters`,
          );
        const provider = p.optStr("provider");
        const cfg = rt.ctx.config();
        if (provider && !cfg.models.providers[provider])
          throw new MethodError(
            "invalid_params",
            `params.provider: expected a name under models.providers; got "${provider}"`,
          );
        try {
          return reconcile(rt.ctx.db, cfg, parseExport(text), provider);
        } catch (err) {
          if (err instanceof ExportFormatError) throw new MethodError("invalid_params", err.message);
          throw err;
        }
      },
    ],
    [
      "usage.sessions",
      (p) => {
        const days = p.optInt("days", 1, 366) ?? 30;
        const limit = p.optInt("limit", 1, 100) ?? 10;
        const since = rt.ctx.clock.now() - days * DAY_MS;
        return {
          since,
          sessions: topSessions(rt.ctx.db, since, limit, rt.ctx.config().budgets.default_price),
        };
      },
    ],
    ["sessions.search", search],
    [
      // The owner's `/model` for any session (the /api PATCH is read-only for other channels' sessions).
      "sessions.model",
      (p) => {
        const sessionKey = p.str("sessionKey");
        const raw = p.o.model;
        if (raw !== null && (typeof raw !== "string" || !/^[^/\s]+\/\S+$/.test(raw)))
          throw new MethodError("invalid_params", "params.model: expected <provider>/<model> or null");
        const model = raw as string | null;
        if (model && !(model.split("/")[0]! in rt.ctx.config().models.providers))
          throw new MethodError(
            "invalid_params",
            `params.model: provider "${model.split("/")[0]}" is not configured under models.providers`,
          );
        const head = rt.sessions.head(sessionKey);
        if (!head) throw new MethodError("not_found", `no session for ${sessionKey}`);
        rt.sessions.setModelOverride(head.id, model);
        return { sessionKey, sessionId: head.id, modelOverride: model };
      },
    ],
    [
      "pairing.revoke",
      async (p) => {
        const store = await pairing();
        const channel = p.str("channel");
        const userId = p.str("userId");
        if (!store.revoke(channel, userId))
          throw new MethodError("not_found", `${userId} is not on the ${channel} allow list`);
        rt.ctx.logger.warn(
          { audit: "pairing", channel, userId },
          `pairing of ${channel} user ${userId} revoked`,
        );
        return { channel, userId, revoked: true };
      },
    ],
    ["cron.pause", toggle(false)],
    ["cron.resume", toggle(true)],
    [
      "heartbeat.runs",
      (p) => {
        const hb = rt.deps.heartbeat;
        if (!hb) throw new MethodError("unavailable", "the heartbeat is not running");
        return { runs: hb.recentRuns(p.optInt("limit", 1, 200) ?? 20) };
      },
    ],
    // What the assistant remembers (MEMORY.md and memory/), read through the workspace door.
    ["memory.entries", () => memoryEntries(rt.ctx.db, resolve(rt.ctx.config().workspace))],
    ["memory.edit", (p) => memoryEdit(rt, p.str("file"), needLine(p), p.str("text"), p.str("replacement"))],
    ["memory.forget", (p) => memoryEdit(rt, p.str("file"), needLine(p), p.str("text"), null)],
  ];
}
