/**
 * Websocket methods beyond chat: agents.list, status, usage.get, usage.budgets, config.get /
 * config.reload, cron.list / run / add / remove / runs, pairing.list / pairing.approve, logs.tail,
 * memory.status / memory.reindex. Methods whose
 * part the wiring did not hand in (`cron`, `usage`) answer `unavailable` or read the store directly.
 */
import { MethodError } from "./protocol.js";
import { pairingLoader } from "./pairing-access.js";
import type { GatewayCron, GatewayDeps, GatewayRuntime } from "./runtime.js";
import type { LogTail } from "./log-tail.js";
import type { MethodHandler } from "./ws-server.js";
import { redactConfig } from "./redact.js";
import { buildStatus, startOfDay, usageSince } from "./status.js";
import { BudgetGuard } from "../budgets/budget-guard.js";
import { costSql, ESTIMATED_SQL } from "../budgets/spend.js";

export function adminMethods(
  rt: GatewayRuntime,
  logs: LogTail,
  wsClients: () => number,
): [string, MethodHandler][] {
  const agents: MethodHandler = () => {
    const cfg = rt.ctx.config();
    return {
      defaultAgent: cfg.agents.default,
      agents: rt.listAgents().map((a) => ({
        id: a.id,
        name: a.name ?? a.id,
        description: a.description ?? null,
        model: a.model ?? cfg.models.primary ?? null,
        engine: a.engine,
        source: a.source,
      })),
    };
  };

  const usage: MethodHandler = async (p) => {
    const now = rt.ctx.clock.now();
    const days = p.optInt("days", 1, 3660);
    const since =
      p.optInt("since", 0, Number.MAX_SAFE_INTEGER) ?? (days ? now - days * 86_400_000 : startOfDay(now));
    const tracker = rt.deps.usage;
    if (tracker) return { since, totals: tracker.aggregate(since), byModel: tracker.byModel(since) };
    const byModel = rt.ctx.db
      .prepare<
        [number],
        {
          provider: string;
          model: string;
          input: number;
          output: number;
          total: number;
          cost: number;
          calls: number;
          estimatedCalls: number;
        }
      >(
        `SELECT provider, model, SUM(input) AS input, SUM(output) AS output, SUM(total) AS total,
         COALESCE(SUM(${costSql(rt.ctx.config().budgets.default_price)}),0) AS cost, COUNT(*) AS calls,
         COALESCE(SUM(${ESTIMATED_SQL}),0) AS estimatedCalls
         FROM usage WHERE created_at >= ? GROUP BY provider, model ORDER BY total DESC`,
      )
      .all(since);
    return { since, totals: usageSince(rt, since), byModel };
  };

  // Spend against every configured budget limit now, and today's prompt-cache hit rate (the console).
  let guard: BudgetGuard | undefined;
  const budgets: MethodHandler = () => {
    guard ??= new BudgetGuard({
      db: rt.ctx.db,
      config: () => rt.ctx.config(),
      now: () => rt.ctx.clock.now(),
    });
    const today = usageSince(rt, startOfDay(rt.ctx.clock.now()));
    return {
      timezone: rt.ctx.config().timezone,
      warnAt: rt.ctx.config().budgets.warn_at,
      limits: guard.status(),
      cacheHitRateToday: today.input > 0 ? today.cacheRead / today.input : null,
    };
  };

  const cron = (): GatewayCron => {
    const c = rt.deps.cron;
    if (!c) throw new MethodError("unavailable", "the cron scheduler is not running");
    return c;
  };
  const cronAdmin = cron;
  /** Runs `fn`, translating the scheduler's typed errors into protocol errors. */
  const cronCall = async <T>(fn: () => T | Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw cronMethodError(err);
    }
  };

  // Pairing requests live in the store (internal/channels/common/pairing.ts); loaded on first use.
  const pairing = pairingLoader(rt);

  const memoryPart = (): NonNullable<GatewayDeps["memory"]> => {
    const m = rt.deps.memory;
    if (!m) throw new MethodError("unavailable", "the memory index is not running");
    return m;
  };

  const tail: MethodHandler = (p, conn) => {
    if (!logs.attached) throw new MethodError("unavailable", "log capture is not available");
    const lines = logs.tail(p.optInt("lines", 1, 500) ?? 100);
    if (p.optBool("follow")) conn.onClose(logs.follow((line) => conn.send("log", line)));
    return { lines };
  };

  /** A live probe of every running channel: the platform's round trip and the liveness marks. */
  const probeChannels: MethodHandler = async () => {
    const list = rt.deps.channels.list?.() ?? [];
    const channels = await Promise.all(
      list.map(async (ch) => {
        const st = ch.status();
        const p = ch.probe
          ? await ch
              .probe()
              .catch((err: unknown) => ({ ok: false, rttMs: 0, detail: (err as Error).message }))
          : { ok: st.state === "connected", rttMs: 0, detail: "no probe for this channel" };
        return {
          channel: ch.id,
          state: st.state,
          ok: p.ok,
          rttMs: p.rttMs,
          detail: p.detail,
          lastHeardAt: st.lastHeardAt ?? null,
          lastInboundAt: st.lastInboundAt ?? null,
          lastSentAt: st.lastSentAt ?? null,
        };
      }),
    );
    return { channels };
  };

  return [
    ["agents.list", agents],
    ["channels.probe", probeChannels],
    ["status", () => buildStatus(rt, wsClients())],
    ["usage.get", usage],
    ["usage.budgets", budgets],
    [
      "config.get",
      () => ({
        file: rt.deps.config.file,
        config: redactConfig(rt.ctx.config()),
        error: rt.deps.config.error() ?? null,
      }),
    ],
    [
      "config.reload",
      () => {
        const out = rt.deps.config.reload();
        if (!out.ok) throw new MethodError("invalid_config", out.error ?? "config reload failed");
        return { changed: out.changed, restartRequired: out.restartRequired };
      },
    ],
    ["cron.list", async () => ({ jobs: await cron().list() })],
    [
      "cron.run",
      async (p) => {
        const id = p.str("id");
        return { jobId: id, result: (await cronCall(() => cron().run(id))) ?? null };
      },
    ],
    [
      // A runtime job (persisted, survives restarts): the same fields as a `cron.jobs` entry.
      "cron.add",
      async (p) => {
        const job = p.o.job;
        if (job === null || typeof job !== "object" || Array.isArray(job))
          throw new MethodError(
            "invalid_params",
            "params.job: expected a job object {id, message, cron|every|at, ...}",
          );
        return { job: await cronCall(() => cronAdmin().add(job)) };
      },
    ],
    [
      "cron.remove",
      async (p) => {
        const id = p.str("id");
        await cronCall(() => cronAdmin().remove(id));
        return { jobId: id, removed: true };
      },
    ],
    [
      "cron.runs",
      async (p) => {
        const id = p.str("id");
        const limit = p.optInt("limit", 1, 500) ?? 20;
        return { jobId: id, runs: await cronCall(() => cronAdmin().runs(id, limit)) };
      },
    ],
    [
      "pairing.list",
      async (p) => {
        const store = await pairing();
        const channel = p.optStr("channel");
        return { requests: store.pending(channel), allowed: store.allowed(channel) };
      },
    ],
    [
      "pairing.approve",
      async (p) => {
        const store = await pairing();
        const code = p.str("code");
        const req = store.approve(code, p.optStr("channel"));
        if (!req)
          throw new MethodError(
            "not_found",
            `no pending pairing request with code ${code} (codes expire after an hour)`,
          );
        // The approved user is told now (the channel's sweep would within seconds anyway).
        for (const ch of rt.deps.channels.list?.() ?? [])
          if (ch.id === req.channel) void ch.welcomePaired?.().catch(() => undefined);
        return { approved: req };
      },
    ],
    ["logs.tail", tail],
    ["memory.status", () => memoryPart().status()],
    ["memory.reindex", () => memoryPart().reindex()],
  ];
}

/** Maps the scheduler's typed errors (CronError codes) to protocol error codes; others pass through. */
function cronMethodError(err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  const message = (err as Error)?.message ?? String(err);
  if (code === "CRON_NOT_FOUND") return new MethodError("not_found", message);
  if (code === "CRON_INVALID" || code === "CRON_INVALID_SCHEDULE")
    return new MethodError("invalid_params", message);
  if (code === "CRON_EXISTS") return new MethodError("conflict", message);
  if (code === "CRON_CONFIG_JOB" || code === "CRON_DISABLED") return new MethodError("forbidden", message);
  return err;
}
