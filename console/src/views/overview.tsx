/**
 * Overview: three questions at a glance, in this order of weight. What needs me (approvals, pairing,
 * failures, budgets, a degraded channel; each linked to where it is settled)? What did today cost
 * against the budget? Is it healthy (channels, model, disk, backups)? The daemon's facts and the
 * scheduler follow, quieter. Live: it follows channel, config, cron, heartbeat, chat and tick events.
 */
import { api, gateway } from "../gateway";
import { useLoad, usePoll, useReloadOn } from "../hooks";
import { Card, Empty, ErrorLine, fmtAgo, fmtBytes, fmtDur } from "../ui";
import { attention } from "./attention";
import { HealthTiles, NeedsYou, TodayCard, type Budgets, type Status } from "./overview-parts";
import "./overview.css";

interface SystemInfo {
  version: string;
  node: string;
  pid: number;
  memory: { rss: number; heapUsed: number; heapTotal: number };
  configFile: string;
  /** Key names, or `{key, running?, file?}` records. */
  pendingRestart: (string | { key: string; running?: unknown; file?: unknown })[];
  notes: { files: number; bytes: number } | null;
}
interface FailedTurn {
  request_id: string;
  started_at: number;
  question: string | null;
  error: string | null;
}

const LIVE = [
  "channel.state",
  "config.error",
  "config.reloaded",
  "heartbeat",
  "cron",
  "tick",
  "chat",
  "session.changed",
];

/** Local midnight: "today" as the owner's clock has it. */
const midnight = (): number => {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d.getTime();
};

export function Overview() {
  const status = useLoad(() => gateway.call<Status>("status"), []);
  const info = useLoad(() => gateway.call<SystemInfo>("system.info"), []);
  const approvals = useLoad(
    () => gateway.call<{ approvals: { summary: string; kind: string }[] }>("approvals.list"),
    [],
  );
  const pairing = useLoad(
    () =>
      gateway.call<{ requests: { channel: string; userId: string; userName?: string | null }[] }>(
        "pairing.list",
      ),
    [],
  );
  const budgets = useLoad(() => gateway.call<Budgets>("usage.budgets"), []);
  const failed = useLoad(() => api<{ traces: FailedTurn[] }>("/api/traces?status=failed&limit=20"), []);
  useReloadOn(status, LIVE);
  useReloadOn(info, ["config.error", "config.reloaded", "tick"]);
  for (const l of [approvals, pairing, budgets, failed]) useReloadOn(l, ["chat", "cron", "tick"]);
  // No event announces a new approval or pairing code.
  usePoll(approvals, 5000);
  usePoll(pairing, 10000);
  const s = status.data;
  const i = info.data;
  const cronJobs = Array.isArray(s?.cron) ? s.cron : [];
  const today = midnight();
  const items =
    s && approvals.data && pairing.data
      ? attention({
          approvals: approvals.data.approvals,
          pairing: pairing.data.requests,
          cronJobs,
          failedTurns: (failed.data?.traces ?? []).filter((t) => t.started_at >= today),
          budgets: budgets.data?.limits ?? [],
          warnAt: budgets.data?.warnAt ?? 0.8,
          channels: s.channels,
          disk: s.disk,
          backup: s.backup,
        })
      : undefined;
  const nextCron = cronJobs.filter((j) => j.nextRunAt).sort((a, b) => a.nextRunAt! - b.nextRunAt!)[0];
  return (
    <div class="ov">
      <ErrorLine error={status.error ?? info.error} />
      {(!!s?.configError || !!i?.pendingRestart.length) && (
        <Card title="Config" id="config-card">
          {s?.configError && (
            <div class="alert" role="alert" id="config-error">
              <strong>The last edit of {i?.configFile ?? "config.yaml"} was rejected</strong> (the previous
              config stays live):
              <pre>{s.configError}</pre>
            </div>
          )}
          {i && i.pendingRestart.length > 0 && (
            <p class="warn-line">
              Changed keys waiting for a restart:{" "}
              {i.pendingRestart
                .map((k) =>
                  typeof k === "string"
                    ? k
                    : "running" in k
                      ? `${k.key} (${JSON.stringify(k.running)} → ${JSON.stringify(k.file)})`
                      : k.key,
                )
                .join(", ")}
            </p>
          )}
        </Card>
      )}
      <NeedsYou items={items} />
      <TodayCard status={s} budgets={budgets.data} />
      <HealthTiles status={s} />
      <div class="ov-quiet">
        <Card title="Daemon">
          {s && i ? (
            <dl class="facts">
              <dt>Version</dt>
              <dd>
                {i.version}{" "}
                <span class="muted">
                  (Node {i.node}, pid {i.pid})
                </span>
              </dd>
              <dt>Uptime</dt>
              <dd>{fmtDur(s.uptimeS * 1000)}</dd>
              <dt>Memory</dt>
              <dd>
                RSS {fmtBytes(i.memory.rss)}{" "}
                <span class="muted">
                  heap {fmtBytes(i.memory.heapUsed)} / {fmtBytes(i.memory.heapTotal)}
                </span>
              </dd>
              <dt>Queue</dt>
              <dd>{s.queueDepth ?? "—"} waiting</dd>
              <dt>Clients</dt>
              <dd>{s.gatewayClients} connected</dd>
            </dl>
          ) : (
            <Empty>Loading…</Empty>
          )}
        </Card>
        <Card title="Scheduler">
          {s ? (
            <dl class="facts">
              <dt>Heartbeat</dt>
              <dd>
                {s.heartbeat.nextRunAt
                  ? `next ${fmtAgo(s.heartbeat.nextRunAt)}`
                  : (s.heartbeat.detail ?? "off")}
              </dd>
              <dt>Cron</dt>
              <dd>
                {Array.isArray(s.cron) ? (
                  <>
                    {s.cron.length} job{s.cron.length === 1 ? "" : "s"}
                    {nextCron && (
                      <span class="muted">
                        {" "}
                        · next <a href="#/cron">{nextCron.id}</a> {fmtAgo(nextCron.nextRunAt)}
                      </span>
                    )}
                  </>
                ) : (
                  s.cron.detail
                )}
              </dd>
              <dt>Memory</dt>
              <dd>
                {i?.notes
                  ? `${i.notes.files} file${i.notes.files === 1 ? "" : "s"}, ${(i.notes.bytes / 1024).toFixed(1)} KiB indexed`
                  : "—"}
              </dd>
            </dl>
          ) : (
            <Empty>Loading…</Empty>
          )}
        </Card>
      </div>
    </div>
  );
}
