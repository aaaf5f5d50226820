/**
 * What needs the owner, from what the overview loaded: approvals and pairing requests waiting, failing
 * cron jobs, turns that failed today, a budget past its warning line, a channel that is not connected,
 * a nearly full disk and a failed backup. Each item says what it is in words and links to the view
 * where it is settled. Pure: the overview renders the list (most urgent first).
 */

/** One thing waiting for the owner. */
export interface AttentionItem {
  /** Stable id for keys and tests (`approvals`, `cron`, `budget:overall:daily_usd`, …). */
  id: string;
  tone: "bad" | "warn";
  /** What it is, in one short sentence. */
  text: string;
  /** A muted line under it (the command asked about, the error), when there is one. */
  detail?: string;
  /** Where it is settled. */
  href: string;
  /** The link's words ("Review", "Open the trace"). */
  action: string;
}

export interface AttentionInput {
  approvals: { summary: string; kind: string }[];
  pairing: { channel: string; userName?: string | null; userId: string }[];
  /** `undeliveredRun`: the job's last reply reached nobody (no chat to take it, no preferred channel). */
  cronJobs: { id: string; lastStatus: string | null; enabled: boolean; undeliveredRun?: number | null }[];
  failedTurns: { request_id: string; question: string | null; error: string | null }[];
  budgets: { id: string; label: string; period: string; fraction: number }[];
  warnAt: number;
  channels: Record<string, { state: string; detail?: string }>;
  disk?: { state: string; detail?: string } | undefined;
  backup?: { last: { ok: boolean; error: string | null } | null } | undefined;
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
const HEALTHY_CHANNEL = /^(connected|ok|running|disabled)$/;

export function attention(i: AttentionInput): AttentionItem[] {
  const out: AttentionItem[] = [];
  if (i.approvals.length)
    out.push({
      id: "approvals",
      tone: "warn",
      text: `${plural(i.approvals.length, "approval waits", "approvals wait")} for your answer`,
      detail: i.approvals[0]!.summary.split("\n")[0]!.slice(0, 140),
      href: "#/approvals",
      action: "Review",
    });
  if (i.pairing.length)
    out.push({
      id: "pairing",
      tone: "warn",
      text: `${plural(i.pairing.length, "person asks", "people ask")} to be paired`,
      detail: i.pairing.map((p) => `${p.userName ?? p.userId} on ${p.channel}`).join(", "),
      href: "#/approvals",
      action: "Review",
    });
  for (const [name, c] of Object.entries(i.channels))
    if (!HEALTHY_CHANNEL.test(c.state))
      out.push({
        id: `channel:${name}`,
        tone: c.state === "error" || c.state === "crashed" ? "bad" : "warn",
        text: `${name} is ${c.state}`,
        ...(c.detail ? { detail: c.detail } : {}),
        href: "#/logs",
        action: "See the log",
      });
  const failingJobs = i.cronJobs.filter((j) => j.enabled && j.lastStatus === "error");
  if (failingJobs.length)
    out.push({
      id: "cron",
      tone: "bad",
      text: `${plural(failingJobs.length, "cron job", "cron jobs")} failed on the last run`,
      detail: failingJobs.map((j) => j.id).join(", "),
      href: "#/cron",
      action: "Open cron",
    });
  const unheard = i.cronJobs.filter((j) => j.undeliveredRun != null);
  if (unheard.length)
    out.push({
      id: "cron:undelivered",
      tone: "warn",
      text: `${plural(unheard.length, "reminder reached", "reminders reached")} nobody: no chat took the reply`,
      detail: `kept in ${unheard.map((j) => `familiar cron runs ${j.id}`).join(", ")}; set owner.preferred_channel to receive them`,
      href: "#/cron",
      action: "Read it",
    });
  if (i.failedTurns.length) {
    const first = i.failedTurns[0]!;
    out.push({
      id: "failed-turns",
      tone: "bad",
      text: `${plural(i.failedTurns.length, "turn", "turns")} failed today`,
      detail: `${first.question ? `“${first.question}”: ` : ""}${(first.error ?? "").split("\n")[0]!.slice(0, 120)}`,
      href: i.failedTurns.length === 1 ? `#/traces/${encodeURIComponent(first.request_id)}` : "#/traces",
      action: i.failedTurns.length === 1 ? "Open the trace" : "Open traces",
    });
  }
  for (const b of i.budgets)
    if (b.fraction >= i.warnAt)
      out.push({
        id: `budget:${b.id}`,
        tone: b.fraction >= 1 ? "bad" : "warn",
        text: `${b.label} budget (${b.period}) at ${Math.round(b.fraction * 100)}%`,
        href: "#/usage",
        action: "Open usage",
      });
  if (i.disk?.state === "degraded")
    out.push({
      id: "disk",
      tone: "bad",
      text: "The disk holding the database is nearly full",
      ...(i.disk.detail ? { detail: i.disk.detail } : {}),
      href: "#/logs",
      action: "See the log",
    });
  if (i.backup?.last && !i.backup.last.ok)
    out.push({
      id: "backup",
      tone: "bad",
      text: "The last backup failed",
      ...(i.backup.last.error ? { detail: i.backup.last.error } : {}),
      href: "#/logs",
      action: "See the log",
    });
  // Failures before waits: red first, then amber, each group in the order above.
  return [...out.filter((x) => x.tone === "bad"), ...out.filter((x) => x.tone === "warn")];
}
