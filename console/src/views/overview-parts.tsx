/**
 * The overview's three blocks: what needs the owner (the heaviest card), today's cost against the daily
 * budget (one large figure and a bar), and the health tiles (channels, model, disk, backups), each tile
 * coloured by the one status that matters.
 */
import type { ComponentChildren } from "preact";
import { ChannelIcon, channelLabel } from "../names";
import { Badge, Empty, estimateTitle, fmtAgo, fmtCost, fmtInt } from "../ui";
import type { AttentionItem } from "./attention";

/** The `status` method's report, as far as the overview reads it. */
export interface Status {
  uptimeS: number;
  defaultAgent: string;
  primaryModel: string | null;
  fallbacks: string[];
  models: {
    state: string;
    detail?: string;
    cooldowns?: { model: string; until: number; failures: number; reason: string }[];
  };
  channels: Record<string, { state: string; detail?: string; identity?: string; since: number }>;
  queueDepth: number | null;
  tokensToday: { total: number; cost: number; calls: number; estimatedCalls?: number };
  heartbeat: { state: string; detail?: string; nextRunAt?: number };
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

/** `usage.budgets`, as far as the overview reads it. */
export interface Budgets {
  warnAt: number;
  limits: {
    id: string;
    label: string;
    period: string;
    unit: "usd" | "tokens";
    limit: number;
    spent: number;
    fraction: number;
  }[];
}

/** What needs the owner, most urgent first; an all-clear that says what would appear here. */
export function NeedsYou(props: { items: AttentionItem[] | undefined }) {
  const items = props.items;
  return (
    <section class={`card ov-needs${items?.length ? " has" : ""}`} id="needs-you" aria-label="Needs you">
      <header>
        <h2>Needs you</h2>
        {!!items?.length && <span class="ov-count">{items.length}</span>}
      </header>
      {!items ? (
        <Empty>Loading…</Empty>
      ) : items.length === 0 ? (
        <p class="all-clear">
          <span class="ok-mark" aria-hidden="true">
            ✓
          </span>
          <span>
            <strong>Nothing needs you.</strong>{" "}
            <span class="muted">
              Approvals, pairing requests, failed turns or cron jobs and a budget near its limit appear here.
            </span>
          </span>
        </p>
      ) : (
        <ul class="needs">
          {items.map((x) => (
            <li key={x.id} class={`need ${x.tone}`} data-attention={x.id}>
              <span class="need-mark" aria-hidden="true" />
              <span class="need-text">
                <strong>{x.text}</strong>
                {x.detail && <span class="need-detail">{x.detail}</span>}
              </span>
              <a class="need-go" href={x.href}>
                {x.action} →
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Today's cost in one large figure, against the daily dollar budget when one is set. */
export function TodayCard(props: { status: Status | undefined; budgets: Budgets | undefined }) {
  const t = props.status?.tokensToday;
  const daily = props.budgets?.limits.find((l) => l.unit === "usd" && /daily/.test(l.period));
  const est = (t?.estimatedCalls ?? 0) > 0;
  const warnAt = props.budgets?.warnAt ?? 0.8;
  const tone = !daily ? "" : daily.fraction >= 1 ? "bad" : daily.fraction >= warnAt ? "warn" : "good";
  return (
    <section class="card ov-today" id="today-card" aria-label="Today">
      <header>
        <h2>Today</h2>
        <a href="#/usage" class="muted">
          Usage →
        </a>
      </header>
      {t ? (
        <>
          <p class="big-cost" title={est ? estimateTitle(t.estimatedCalls ?? 0) : undefined}>
            {fmtCost(t.cost, est)}
            {daily && <span class="of"> of {fmtCost(daily.limit)}</span>}
          </p>
          {daily ? (
            <>
              <div
                class={`budget-bar ${tone}`}
                role="img"
                aria-label={`${Math.round(daily.fraction * 100)}% of the daily budget`}
              >
                <span style={{ width: `${Math.min(100, daily.fraction * 100)}%` }} />
                <i style={{ left: `${warnAt * 100}%` }} title={`warning at ${Math.round(warnAt * 100)}%`} />
              </div>
              <p class="muted">
                {Math.round(daily.fraction * 100)}% of the {daily.label} daily budget
              </p>
            </>
          ) : (
            <p class="muted">No daily budget set (budgets.overall.daily_usd in config.yaml).</p>
          )}
          <p class="muted">
            {fmtInt(t.total)} tokens · {t.calls} model call{t.calls === 1 ? "" : "s"}
          </p>
        </>
      ) : (
        <Empty>Loading…</Empty>
      )}
    </section>
  );
}

const tileTone = (states: string[]): "good" | "warn" | "bad" =>
  states.some((s) => /^(error|failed|crashed|disconnected)$/.test(s))
    ? "bad"
    : states.some((s) => !/^(ok|connected|running)$/.test(s))
      ? "warn"
      : "good";

function Tile(props: {
  title: string;
  tone: string;
  headline: string;
  children?: ComponentChildren;
  id?: string;
}) {
  return (
    <section class={`card tile ${props.tone}`} id={props.id} aria-label={props.title}>
      <h2>{props.title}</h2>
      <p class="tile-head">
        <span class="tile-dot" aria-hidden="true" />
        {props.headline}
      </p>
      {props.children}
    </section>
  );
}

/** Channels, model, disk and backups: one tile each, coloured by its state. */
export function HealthTiles(props: { status: Status | undefined }) {
  const s = props.status;
  if (!s)
    return (
      <div class="ov-health">
        <Empty>Loading…</Empty>
      </div>
    );
  const channels = Object.entries(s.channels);
  const chTone = channels.length ? tileTone(channels.map(([, c]) => c.state)) : "good";
  const up = channels.filter(([, c]) => /^(connected|ok|running)$/.test(c.state)).length;
  const disk = s.disk;
  const diskTone = disk?.state === "degraded" ? "bad" : disk?.state === "ok" ? "good" : "warn";
  const last = s.backup?.last;
  const backupTone = !last ? "warn" : last.ok ? "good" : "bad";
  const modelTone = s.models.cooldowns?.length ? "warn" : tileTone([s.models.state]);
  return (
    <div class="ov-health" id="health">
      <Tile
        title="Channels"
        id="channels"
        tone={chTone}
        headline={channels.length ? `${up} of ${channels.length} connected` : "Gateway only"}
      >
        <ul class="tile-list">
          {channels.map(([id, c]) => (
            <li key={id} data-channel={id}>
              <ChannelIcon channel={id} /> {channelLabel(id)} <Badge state={c.state} />
              {c.identity && <span class="muted"> {c.identity}</span>}
              {c.detail && c.state !== "connected" && <div class="detail">{c.detail}</div>}
            </li>
          ))}
        </ul>
      </Tile>
      <Tile title="Model" tone={modelTone} headline={s.primaryModel ?? "none"}>
        <p class="muted">
          {s.models.cooldowns?.length
            ? s.models.cooldowns
                .map((c) => `${c.model} cooling down until ${new Date(c.until).toLocaleTimeString()}`)
                .join("; ")
            : s.fallbacks.length
              ? `then ${s.fallbacks.join(", ")}`
              : `agent ${s.defaultAgent}, no fallback`}
        </p>
      </Tile>
      <Tile
        title="Disk"
        tone={diskTone}
        headline={
          disk?.free_mb != null
            ? `${(disk.free_mb / 1024).toFixed(1)} GB free`
            : disk?.state === "ok"
              ? "ok"
              : "not watched"
        }
      >
        <p class="muted">
          {disk?.total_mb != null
            ? `of ${(disk.total_mb / 1024).toFixed(0)} GB on the data dir's disk`
            : (disk?.detail ?? "")}
        </p>
      </Tile>
      <Tile
        title="Backups"
        tone={backupTone}
        headline={!last ? "None yet" : last.ok ? `Last ${fmtAgo(last.at)}` : `Failed ${fmtAgo(last.at)}`}
      >
        <p class="muted">
          {!last
            ? s.backup?.enabled
              ? "the first scheduled one has not run yet"
              : "no schedule: run familiar backup, or set backup.enabled"
            : !last.ok
              ? (last.error ?? "")
              : s.backup?.enabled
                ? "on schedule"
                : "by hand (no schedule)"}
        </p>
      </Tile>
    </div>
  );
}
