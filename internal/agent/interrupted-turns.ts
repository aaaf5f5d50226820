/**
 * Turns interrupted by a crash (kill -9, power cut) are answered after the restart.
 *
 * A user message is committed before its turn runs, so after a crash the store can hold user messages
 * that never got a final answer: the turn was queued or streaming when the process died. Without this
 * module the user would never hear back (a Telegram update is marked handled once its message is
 * committed, so it is not delivered again either). At start the daemon finds those messages and runs
 * their turns again through the normal per-session queue, keeping the stored user message and its
 * request id (nothing is stored twice); the answer goes to the session's origin channel, if any.
 *
 * Invariants:
 * - only recent messages are resumed (`maxAgeMs`, default 15 min) and at most `maxTurns` of them, so a
 *   restart after a long outage never fires a surprise burst of model calls for stale requests;
 * - subagent, cron and heartbeat sessions are never resumed here: their owners (the task manager, the
 *   cron service) mark their own runs interrupted and report them;
 * - resumed turns are submitted synchronously, before any channel starts, so they keep their place
 *   ahead of new messages in each session's FIFO;
 * - finding them reads only the tail of the messages table (a rowid range, one linear pass), so
 *   start-up stays cheap.
 */
import type { AgentHost, TurnResult } from "../core/host.js";
import type { CoreContext } from "../runtime/context.js";
import type { Db } from "../store/db.js";
import { parseSessionKey } from "../session/keys.js";
import { sleep } from "../core/clock.js";

/** A user message whose turn never produced a final answer. */
export interface InterruptedTurn {
  messageId: number;
  sessionId: string;
  sessionKey: string;
  agentId: string;
  origin: string | null;
  requestId: string;
  text: string;
  createdAt: number;
}

export interface FindOptions {
  now: number;
  /** Only messages younger than this are resumed. Default 15 minutes. */
  maxAgeMs?: number;
  /** How many of the newest messages (by rowid) to inspect. Default 5,000. */
  scan?: number;
}

const DEFAULT_MAX_AGE_MS = 15 * 60_000;
const DEFAULT_SCAN = 5000;

/** Lists interrupted user turns of resumable sessions (oldest first). */
export function findInterruptedTurns(db: Db, opts: FindOptions): InterruptedTurn[] {
  const since = opts.now - (opts.maxAgeMs ?? DEFAULT_MAX_AGE_MS);
  // One pass over the newest rows (a rowid range, no index needed): an answer always comes after its
  // question, so any answer to a user message in this window is in the window too. Linear in `scan`,
  // which keeps the daemon's start fast however busy the last minutes were.
  const tail = db
    .prepare<
      [number],
      { id: number; role: string; requestId: string | null; final: number; createdAt: number }
    >(
      `SELECT id, role, request_id AS requestId, (tool_calls IS NULL) AS final, created_at AS createdAt
         FROM messages WHERE id > (SELECT COALESCE(MAX(id), 0) FROM messages) - ? ORDER BY id`,
    )
    .all(opts.scan ?? DEFAULT_SCAN);
  const answered = new Set<string>();
  for (const m of tail) if (m.role === "assistant" && m.final && m.requestId) answered.add(m.requestId);
  const ids = tail
    .filter((m) => m.role === "user" && m.requestId && m.createdAt >= since && !answered.has(m.requestId))
    .map((m) => m.id);
  if (ids.length === 0) return [];
  const row = db.prepare<
    [number],
    {
      messageId: number;
      sessionId: string;
      sessionKey: string;
      agentId: string;
      origin: string | null;
      requestId: string;
      text: string;
      createdAt: number;
    }
  >(
    `SELECT m.id AS messageId, m.session_id AS sessionId, s.key AS sessionKey, s.agent_id AS agentId,
            s.origin AS origin, m.request_id AS requestId, m.content AS text, m.created_at AS createdAt
       FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id = ?`,
  );
  const out: InterruptedTurn[] = [];
  for (const id of ids) {
    const r = row.get(id);
    if (r && resumable(r.sessionKey)) out.push(r);
  }
  return out;
}

/** Sessions a person talks in: channel DMs and groups (not subagents) and gateway sessions. */
function resumable(key: string): boolean {
  const k = parseSessionKey(key);
  if (k.kind === "gateway") return true;
  return (k.kind === "dm" || k.kind === "group") && k.channel !== "subagent";
}

export interface ResumeDeps {
  ctx: CoreContext;
  host: AgentHost;
  /** Delivers an answer to a session's origin (`telegram:123`); absent = store only. */
  deliver?: (target: string, text: string) => Promise<void>;
  maxAgeMs?: number;
  /** At most this many turns are resumed per start. Default 100. */
  maxTurns?: number;
}

/**
 * Submits every interrupted turn again (synchronously) and returns a promise that settles when their
 * answers were delivered. Never throws: failures are logged.
 */
export function resumeInterruptedTurns(deps: ResumeDeps): { count: number; done: Promise<void> } {
  const { ctx, host } = deps;
  let turns: InterruptedTurn[];
  try {
    turns = findInterruptedTurns(ctx.db, {
      now: ctx.clock.now(),
      ...(deps.maxAgeMs !== undefined ? { maxAgeMs: deps.maxAgeMs } : {}),
    });
  } catch (err) {
    ctx.logger.error({ err: (err as Error).message }, "could not look for interrupted turns");
    return { count: 0, done: Promise.resolve() };
  }
  const max = deps.maxTurns ?? 100;
  if (turns.length > max) {
    ctx.logger.warn(
      { found: turns.length, resumed: max },
      `${turns.length} turns were interrupted by the last shutdown; answering the newest ${max}`,
    );
    turns = turns.slice(-max);
  }
  if (turns.length === 0) return { count: 0, done: Promise.resolve() };
  ctx.logger.warn(
    { turns: turns.length },
    `answering ${turns.length} message(s) whose turns were interrupted by the last shutdown`,
  );
  const pending = turns.map(async (t) => {
    const handle = host.submit({
      channel: channelOf(t.sessionKey),
      sessionKey: t.sessionKey,
      agentId: t.agentId,
      text: t.text,
      ...(t.origin ? { replyTarget: t.origin } : {}),
      resume: { sessionId: t.sessionId, messageId: t.messageId, requestId: t.requestId },
    });
    const r: TurnResult = await handle.result;
    if (!t.origin || !deps.deliver) return;
    const text = replyText(r);
    if (!text) return;
    await deliverWithRetry(deps, t.origin, text);
  });
  const done = Promise.allSettled(pending).then((results) => {
    for (const r of results)
      if (r.status === "rejected")
        ctx.logger.error(
          { err: (r.reason as Error)?.message ?? String(r.reason) },
          "could not deliver the answer to an interrupted turn",
        );
  });
  return { count: turns.length, done };
}

/** The answer, or its partial text followed by the error once (a failed turn's text may be the error). */
function replyText(r: TurnResult): string {
  const text = r.text.trim();
  const err = r.finishReason === "error" ? r.error?.message.trim() : undefined;
  if (!err || text === err) return text;
  return text ? `${text}\n\n${err}` : err;
}

function channelOf(key: string): string {
  const k = parseSessionKey(key);
  return k.kind === "dm" || k.kind === "group" ? k.channel : "gateway";
}

const RETRY_MS = [500, 2000, 5000, 15_000];

async function deliverWithRetry(deps: ResumeDeps, target: string, text: string): Promise<void> {
  let last: unknown;
  for (let i = 0; i <= RETRY_MS.length; i++) {
    try {
      await deps.deliver!(target, text);
      return;
    } catch (err) {
      // The channel may still be connecting right after start.
      last = err;
      const wait = RETRY_MS[i];
      if (wait === undefined) break;
      await sleep(deps.ctx.clock, wait);
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}
