/**
 * Websocket methods beyond chat: agents.list, status, usage.get, config.get / config.reload,
 * cron.list / cron.run, pairing.list / pairing.approve, logs.tail. Methods that depend on parts
 * other modules register (`parts.extra.cron`, `.usage`, `.pairing`) answer `unavailable` without them.
 */
import { listAgents } from "../agent/agents.js";
import { MethodError } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import type { LogTail } from "./log-tail.js";
import type { MethodHandler } from "./ws-server.js";
import { redactConfig } from "./redact.js";
import { buildStatus, startOfDay, usageSince } from "./status.js";

interface CronPart {
  list(): unknown;
  run(id: string): unknown;
}
interface PairingPart {
  list(channel?: string): unknown;
  approve(channel: string, code: string): unknown;
}
interface UsagePart {
  summary(opts: { since: number; until?: number }): unknown;
}

export function adminMethods(
  rt: GatewayRuntime,
  logs: LogTail,
  wsClients: () => number,
): [string, MethodHandler][] {
  const agents: MethodHandler = () => {
    const cfg = rt.ctx.config();
    return {
      defaultAgent: cfg.agents.default,
      agents: listAgents(cfg, rt.agentSources()).map((a) => ({
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
    const tracker = rt.part<UsagePart>("usage", ["summary"]);
    if (tracker) return { since, summary: await tracker.summary({ since }) };
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
        }
      >(
        `SELECT provider, model, SUM(input) AS input, SUM(output) AS output, SUM(total) AS total,
         COALESCE(SUM(cost),0) AS cost, COUNT(*) AS calls FROM usage WHERE created_at >= ? GROUP BY provider, model ORDER BY total DESC`,
      )
      .all(since);
    return { since, totals: usageSince(rt, since), byModel };
  };

  const cron = (): CronPart => {
    const c = rt.part<CronPart>("cron", ["list", "run"]);
    if (!c) throw new MethodError("unavailable", "the cron scheduler is not running");
    return c;
  };

  const pairing = (): PairingPart => {
    const pp = rt.part<PairingPart>("pairing", ["list", "approve"]);
    if (!pp)
      throw new MethodError(
        "unavailable",
        "pairing is not available (no channel with dm_policy pairing is running)",
      );
    return pp;
  };

  const tail: MethodHandler = (p, conn) => {
    if (!logs.attached) throw new MethodError("unavailable", "log capture is not available");
    const lines = logs.tail(p.optInt("lines", 1, 500) ?? 100);
    if (p.optBool("follow")) conn.onClose(logs.follow((line) => conn.send("log", line)));
    return { lines };
  };

  return [
    ["agents.list", agents],
    ["status", () => buildStatus(rt, wsClients())],
    ["usage.get", usage],
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
    ["cron.run", async (p) => ({ jobId: p.str("id"), result: (await cron().run(p.str("id"))) ?? null })],
    ["pairing.list", async (p) => ({ requests: await pairing().list(p.optStr("channel")) })],
    [
      "pairing.approve",
      async (p) => ({ approved: (await pairing().approve(p.str("channel"), p.str("code"))) ?? true }),
    ],
    ["logs.tail", tail],
  ];
}
