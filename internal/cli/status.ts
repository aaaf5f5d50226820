/**
 * `familiar status`: asks the running daemon's gateway (`status` method) and prints uptime, channels,
 * models and cooldowns, queue depth, today's tokens, the next heartbeat and cron runs.
 */
import { safeLine } from "./terminal-text.js";
import { GatewayClient, GatewayClientError } from "../gateway/client.js";
import { connectAsOwner } from "./owner-client.js";
import { formatUsd } from "../core/money.js";
import { localTime } from "./cli-format.js";

export interface StatusOptions {
  config: string;
  url?: string;
  token?: string;
  json?: boolean;
}

function duration(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return [d ? `${d}d` : "", h ? `${h}h` : "", `${m}m`, d || h ? "" : ` ${s % 60}s`].join("").trim();
}

function when(v: unknown): string {
  if (typeof v === "number") return localTime(v);
  if (typeof v === "string") return v;
  return "-";
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Renders the status payload for humans. Unknown shapes of optional parts are printed compactly. */
export function formatStatus(s: Record<string, unknown>): string {
  const lines: string[] = [];
  lines.push(`uptime       ${duration(Number(s.uptimeS ?? 0))} (pid ${String(s.pid ?? "?")})`);
  lines.push(
    `agent        ${String(s.defaultAgent ?? "?")}  model ${String(s.primaryModel ?? "(none: echo)")}`,
  );
  const fallbacks = Array.isArray(s.fallbacks) ? (s.fallbacks as string[]) : [];
  if (fallbacks.length) lines.push(`fallbacks    ${fallbacks.join(", ")}`);
  const models = obj(s.models);
  lines.push(
    `models       ${compact(s.models)}${Array.isArray(models.chain) ? `  chain ${(models.chain as string[]).join(" -> ") || "-"}` : ""}${models.usingEcho ? "  (echo model: no provider configured)" : ""}`,
  );
  for (const cd of Array.isArray(models.cooldowns) ? (models.cooldowns as unknown[]) : []) {
    const c = obj(cd);
    lines.push(
      `  cooldown   ${String(c.model ?? c.ref ?? "?")} until ${when(c.until ?? c.untilMs)}${c.reason ? ` (${String(c.reason)})` : ""}`,
    );
  }
  const channels = Object.entries(obj(s.channels));
  lines.push(`channels     ${channels.length ? "" : "(none)"}`);
  for (const [id, st] of channels) {
    const c = obj(st);
    lines.push(
      `  ${safeLine(id).padEnd(10)} ${safeLine(String(c.state ?? "?"))}${c.identity ? ` as ${safeLine(String(c.identity))}` : ""}${c.detail ? ` (${safeLine(String(c.detail))})` : ""}`,
    );
  }
  lines.push(`queue        ${s.queueDepth === null ? "host not running" : String(s.queueDepth)}`);
  const t = obj(s.tokensToday);
  lines.push(
    `tokens today ${String(t.total ?? 0)} (in ${String(t.input ?? 0)}, out ${String(t.output ?? 0)}, ${String(t.calls ?? 0)} calls, ${formatUsd(Number(t.cost ?? 0), Number(t.estimatedCalls ?? 0) > 0)})`,
  );
  if (Number(t.estimatedCalls ?? 0) > 0)
    lines.push(
      `             ≈: ${String(t.estimatedCalls)} call(s) without a price, counted at budgets.default_price`,
    );
  const hb = obj(s.heartbeat);
  const lastHb = obj(Array.isArray(hb.recent) ? hb.recent[0] : undefined);
  lines.push(
    `heartbeat    ${hb.nextRunAt !== undefined ? `next ${when(hb.nextRunAt)}` : compact(s.heartbeat)}${
      lastHb.status
        ? `  last ${String(lastHb.status)} ${when(lastHb.at)}${lastHb.reason ? ` (${String(lastHb.reason)})` : ""}`
        : ""
    }`,
  );
  if (Array.isArray(s.cron)) {
    lines.push(`cron         ${s.cron.length} job(s)`);
    for (const j of s.cron as unknown[]) {
      const job = obj(j);
      lines.push(
        `  ${String(job.id ?? "?").padEnd(16)} next ${when(job.nextRunAt ?? job.next)}${job.lastStatus ? `  last ${String(job.lastStatus)}` : ""}`,
      );
      // A reply that reached nobody (no chat, no owner.preferred_channel): say where it is kept.
      if (typeof job.undeliveredRun === "number")
        lines.push(
          `    reply not delivered (no chat to take it; set owner.preferred_channel): familiar cron runs ${String(job.id)}`,
        );
    }
  } else lines.push(`cron         ${compact(s.cron)}`);
  if (s.disk !== undefined) lines.push(`disk         ${compact(s.disk)}`);
  if (s.configError) lines.push(`config error ${String(s.configError)}`);
  const pending = Array.isArray(s.pendingRestart) ? (s.pendingRestart as unknown[]).map(obj) : [];
  if (pending.length) {
    lines.push(`restart      needed to apply ${pending.map((p) => String(p.key)).join(", ")}`);
    for (const p of pending)
      if ("running" in p)
        lines.push(
          `  ${String(p.key).padEnd(16)} running ${JSON.stringify(p.running)}, config.yaml ${JSON.stringify(p.file)}`,
        );
  }
  return lines.join("\n");
}

function compact(v: unknown): string {
  if (v === undefined || v === null) return "-";
  const o = obj(v);
  if (typeof o.state === "string") return `${o.state}${o.detail ? ` (${String(o.detail)})` : ""}`;
  return JSON.stringify(v);
}

export async function statusCommand(opts: StatusOptions): Promise<void> {
  let client: GatewayClient;
  try {
    client = await connectAsOwner(opts, "familiar-status");
  } catch (err) {
    process.stderr.write(`familiar status: ${(err as GatewayClientError).message}\n`);
    process.exitCode = 1;
    return;
  }
  try {
    const s = await client.request<Record<string, unknown>>("status");
    process.stdout.write((opts.json ? JSON.stringify(s, null, 2) : formatStatus(s)) + "\n");
  } finally {
    await client.close();
  }
}
