/** Overview: uptime, version, router, channels, scheduler, config errors, memory and queue; live. */
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import {
  Badge,
  Card,
  Empty,
  ErrorLine,
  fmtAgo,
  fmtBytes,
  fmtCost,
  fmtDur,
  fmtInt,
  estimateTitle,
} from "../ui";

interface ChannelStatus {
  state: string;
  detail?: string;
  identity?: string;
  since: number;
}
interface Status {
  uptimeS: number;
  defaultAgent: string;
  primaryModel: string | null;
  fallbacks: string[];
  models: {
    state: string;
    detail?: string;
    chain?: string[];
    cooldowns?: { model: string; until: number; failures: number; reason: string }[];
  };
  channels: Record<string, ChannelStatus>;
  queueDepth: number | null;
  tokensToday: { total: number; cost: number; calls: number; estimatedCalls?: number };
  heartbeat: { state: string; detail?: string; nextRunAt?: number; every?: number };
  cron:
    | { id: string; nextRunAt: number | null; lastStatus: string | null; enabled: boolean }[]
    | { state: string; detail?: string };
  gatewayClients: number;
  configError: string | null;
  /** The data dir's disk: `degraded` while nearly full (runtime/disk-watch.ts). */
  disk?: { state: string; detail?: string; free_mb?: number; total_mb?: number };
  backup?: {
    enabled: boolean;
    last: { at: number; ok: boolean; dir: string | null; error: string | null } | null;
  };
}
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

export function Overview() {
  const status = useLoad(() => gateway.call<Status>("status"), []);
  const info = useLoad(() => gateway.call<SystemInfo>("system.info"), []);
  useReloadOn(status, LIVE);
  useReloadOn(info, ["config.error", "config.reloaded", "tick"]);
  const s = status.data;
  const i = info.data;
  const cronJobs = Array.isArray(s?.cron) ? s.cron : [];
  const nextCron = cronJobs.filter((j) => j.nextRunAt).sort((a, b) => a.nextRunAt! - b.nextRunAt!)[0];
  return (
    <div class="grid">
      <ErrorLine error={status.error ?? info.error} />
      {s?.disk?.state === "degraded" && (
        <Card title="Disk" id="disk-card">
          <div class="alert" role="alert" id="disk-low">
            <strong>The disk holding the database is nearly full.</strong> {s.disk.detail}
          </div>
        </Card>
      )}
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
      <Card title="Channels" id="channels">
        {s ? (
          Object.keys(s.channels).length ? (
            <ul class="rows">
              {Object.entries(s.channels).map(([id, c]) => (
                <li key={id} data-channel={id}>
                  <strong>{id}</strong> <Badge state={c.state} />{" "}
                  {c.identity && <span class="muted">{c.identity}</span>}
                  <span class="muted"> since {fmtAgo(c.since)}</span>
                  {c.detail && <div class="detail">{c.detail}</div>}
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No channels enabled (only the gateway).</Empty>
          )
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <Card title="Daemon">
        {s && i ? (
          <dl class="facts">
            <dt>Version</dt>
            <dd>
              {i.version} (Node {i.node}, pid {i.pid})
            </dd>
            <dt>Uptime</dt>
            <dd>{fmtDur(s.uptimeS * 1000)}</dd>
            <dt>Memory</dt>
            <dd>
              RSS {fmtBytes(i.memory.rss)}, heap {fmtBytes(i.memory.heapUsed)} /{" "}
              {fmtBytes(i.memory.heapTotal)}
            </dd>
            <dt>Notes</dt>
            <dd>
              {i.notes
                ? `${i.notes.files} memory file(s), ${(i.notes.bytes / 1024).toFixed(1)} KiB indexed`
                : "—"}
            </dd>
            <dt>Queue</dt>
            <dd>{s.queueDepth ?? "—"} waiting</dd>
            <dt>Today</dt>
            <dd>
              {fmtInt(s.tokensToday.total)} tokens,{" "}
              <span
                title={s.tokensToday.estimatedCalls ? estimateTitle(s.tokensToday.estimatedCalls) : undefined}
              >
                {fmtCost(s.tokensToday.cost, (s.tokensToday.estimatedCalls ?? 0) > 0)}
              </span>{" "}
              ({s.tokensToday.calls} calls)
            </dd>
            <dt>Clients</dt>
            <dd>{s.gatewayClients} connected</dd>
          </dl>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <Card title="Models">
        {s ? (
          <div>
            <p>
              <Badge state={s.models.state} /> default agent <strong>{s.defaultAgent}</strong>, primary{" "}
              <code class="ref">{s.primaryModel ?? "none"}</code>
              {s.fallbacks.length > 0 && <span> then {s.fallbacks.join(", ")}</span>}
            </p>
            {s.models.detail && <p class="muted">{s.models.detail}</p>}
            {s.models.cooldowns?.map((c) => (
              <p key={c.model} class="warn-line">
                {c.model} cooling down until {new Date(c.until).toLocaleTimeString()} ({c.failures} failures:{" "}
                {c.reason})
              </p>
            ))}
          </div>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <Card title="Scheduler">
        {s ? (
          <dl class="facts">
            <dt>Heartbeat</dt>
            <dd>
              <Badge state={s.heartbeat.state} />{" "}
              {s.heartbeat.nextRunAt ? `next ${fmtAgo(s.heartbeat.nextRunAt)}` : (s.heartbeat.detail ?? "")}
            </dd>
            <dt>Cron</dt>
            <dd>
              {Array.isArray(s.cron)
                ? `${s.cron.length} job(s)${nextCron ? `, next ${nextCron.id} ${fmtAgo(nextCron.nextRunAt)}` : ""}`
                : s.cron.detail}
            </dd>
            <dt>Backup</dt>
            <dd>
              {s.backup?.last ? (
                <>
                  <Badge state={s.backup.last.ok ? "ok" : "error"} />{" "}
                  {s.backup.last.ok
                    ? `last ${fmtAgo(s.backup.last.at)}`
                    : `failed ${fmtAgo(s.backup.last.at)}: ${s.backup.last.error ?? ""}`}
                </>
              ) : (
                "none yet (familiar backup)"
              )}
              {s.backup && !s.backup.enabled ? ", schedule off" : ""}
            </dd>
          </dl>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
    </div>
  );
}
