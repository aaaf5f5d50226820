/**
 * The ledger beside a provider's own export (provider-export.ts), per day (UTC, as every export is)
 * and model: the provider's figure, Familiar's, the difference, and the calls that explain it.
 *
 * Which ledger rows are compared: those of `provider` (a `models.providers` name) when given; else of
 * the providers whose `base_url` is the export's own host (api.openai.com, openrouter.ai); else every
 * row whose model the export names. Only the export's days count.
 *
 * Explaining a difference: with a per-call export (OpenRouter) each call is matched by the provider's
 * id the ledger keeps (`call_id`): calls missing on either side and calls priced differently are
 * named. With a per-day export (OpenAI) the day's calls of that model are named, estimates first, with
 * how each figure was made, and the ratio says whether a price is off.
 */
import type { Config } from "../../config/schema.js";
import type { Db } from "../../store/db.js";
import { costSql } from "../../budgets/spend.js";
import { modelKey, type ProviderExport } from "./provider-export.js";
import type { LedgerCall, ReconcileReport, ReconcileRow } from "./reconcile-wire.js";

export type { LedgerCall, ReconcileReport, ReconcileRow } from "./reconcile-wire.js";

/** Half a percent: what the ledger promises (docs/costs.md). */
export const TOLERANCE = 0.005;

interface Row {
  id: number;
  created_at: number;
  provider: string;
  model: string;
  kind: string | null;
  request_id: string | null;
  session_key: string | null;
  job_id: string | null;
  call_id: string | null;
  usd: number;
  cost_source: string | null;
  input: number;
  output: number;
}

const HOSTS: Record<string, ProviderExport["kind"][]> = {
  "api.openai.com": ["openai-costs", "openai-activity"],
  "openrouter.ai": ["openrouter-activity"],
};

function providersFor(cfg: Config, exp: ProviderExport, provider: string | undefined): string[] | undefined {
  if (provider) return [provider];
  const named = Object.entries(cfg.models.providers)
    .filter(([, p]) => {
      try {
        return HOSTS[new URL(p.base_url).hostname]?.includes(exp.kind) ?? false;
      } catch {
        return false;
      }
    })
    .map(([n]) => n);
  return named.length > 0 ? named : undefined;
}

const agree = (a: number, b: number): boolean => Math.abs(a - b) <= Math.max(TOLERANCE * Math.abs(a), 0.0001);

/** Compares the ledger with a provider export. */
export function reconcile(db: Db, cfg: Config, exp: ProviderExport, provider?: string): ReconcileReport {
  const days = [...new Set(exp.lines.map((l) => l.day))].sort();
  const providers = providersFor(cfg, exp, provider);
  const from = days[0] ? Date.parse(`${days[0]}T00:00:00Z`) : 0;
  const to = days.at(-1) ? Date.parse(`${days.at(-1)}T00:00:00Z`) + 86_400_000 : 0;
  const all = db
    .prepare<[number, number], Row>(
      `SELECT id, created_at, provider, model, kind, request_id, session_key, job_id, call_id,
              ${costSql(cfg.budgets.default_price)} AS usd, cost_source, input, output
       FROM usage WHERE created_at >= ? AND created_at < ? ORDER BY id`,
    )
    .all(from, to);
  const exportModels = new Set(exp.lines.map((l) => modelKey(l.model)));
  const rows = all.filter((r) =>
    providers ? providers.includes(r.provider) : exportModels.has(modelKey(r.model)),
  );
  const dayOf = (t: number): string => new Date(t).toISOString().slice(0, 10);
  const groups = new Map<string, { day: string; model: string; lines: typeof exp.lines; calls: Row[] }>();
  const group = (day: string, model: string) => {
    const key = `${day}|${modelKey(model)}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { day, model: modelKey(model), lines: [], calls: [] }));
    return g;
  };
  for (const l of exp.lines) group(l.day, l.model).lines.push(l);
  for (const r of rows)
    if (days.includes(dayOf(r.created_at))) group(dayOf(r.created_at), r.model).calls.push(r);

  const out: ReconcileRow[] = [];
  const hasCost = exp.kind !== "openai-activity";
  for (const g of [...groups.values()].sort(
    (a, b) => a.day.localeCompare(b.day) || a.model.localeCompare(b.model),
  )) {
    const familiar = g.calls.reduce((a, r) => a + r.usd, 0);
    const familiarTokens = g.calls.reduce((a, r) => a + r.input + r.output, 0);
    const providerCost = hasCost ? g.lines.reduce((a, l) => a + (l.cost ?? 0), 0) : null;
    const providerTokens = g.lines.some((l) => l.input !== undefined)
      ? g.lines.reduce((a, l) => a + (l.input ?? 0) + (l.output ?? 0), 0)
      : null;
    const matches =
      providerCost !== null ? agree(providerCost, familiar) : agree(providerTokens ?? 0, familiarTokens);
    const row: ReconcileRow = {
      day: g.day,
      model: g.model,
      provider: providerCost,
      familiar,
      difference: providerCost !== null ? providerCost - familiar : 0,
      providerTokens,
      familiarTokens,
      calls: g.calls.length,
      matches,
      explain: [],
      suspects: [],
    };
    if (!matches) explain(row, g.lines, g.calls);
    out.push(row);
  }
  const pTotal = hasCost ? out.reduce((a, r) => a + (r.provider ?? 0), 0) : null;
  const fTotal = out.reduce((a, r) => a + r.familiar, 0);
  return {
    kind: exp.kind,
    providers: providers ?? [...new Set(rows.map((r) => r.provider))],
    rows: out,
    total: { provider: pTotal, familiar: fTotal, difference: pTotal !== null ? pTotal - fTotal : 0 },
  };
}

const named = (r: Row): LedgerCall => ({
  id: r.id,
  at: r.created_at,
  provider: r.provider,
  model: r.model,
  kind: r.kind,
  requestId: r.request_id,
  sessionKey: r.session_key,
  jobId: r.job_id,
  callId: r.call_id,
  cost: r.usd,
  source: r.cost_source,
  input: r.input,
  output: r.output,
});

const usd = (v: number): string => `$${v.toFixed(6).replace(/0+$/, "").replace(/\.$/, ".00")}`;

/** Names the calls behind a row's difference. */
function explain(row: ReconcileRow, lines: ProviderExport["lines"], calls: Row[]): void {
  const byCall = new Map(lines.filter((l) => l.callId).map((l) => [l.callId as string, l]));
  if (byCall.size > 0) {
    const seen = new Set<string>();
    for (const c of calls) {
      const l = c.call_id ? byCall.get(c.call_id) : undefined;
      if (!l) {
        row.explain.push(
          `call #${c.id} (${c.kind ?? "call"}, ${usd(c.usd)}) is in the ledger but not in the export`,
        );
        row.suspects.push(named(c));
        continue;
      }
      seen.add(l.callId as string);
      if (!agree(l.cost ?? 0, c.usd)) {
        row.explain.push(
          `call #${c.id} (${c.call_id}, ${c.kind ?? "call"}): the provider billed ${usd(l.cost ?? 0)}, ` +
            `the ledger has ${usd(c.usd)} (${c.cost_source ?? "no source"})`,
        );
        row.suspects.push(named(c));
      }
    }
    for (const [id, l] of byCall)
      if (!seen.has(id)) row.explain.push(`${id} (${usd(l.cost ?? 0)}) was billed but is not in the ledger`);
    return;
  }
  // A per-day export: the day's calls, estimates first, and the ratio that points at a price.
  const order = (r: Row): number => (r.cost_source === "estimated" || r.cost_source === "default" ? 0 : 1);
  const sorted = [...calls].sort((a, b) => order(a) - order(b) || b.usd - a.usd);
  const sources = new Map<string, number>();
  for (const c of calls)
    sources.set(c.cost_source ?? "older row", (sources.get(c.cost_source ?? "older row") ?? 0) + 1);
  const how = [...sources].map(([s, n]) => `${n} ${s}`).join(", ");
  if (row.provider !== null && row.familiar > 0) {
    const ratio = row.provider / row.familiar;
    row.explain.push(
      `the provider billed ${ratio.toFixed(2)}x what the ledger has for ${row.calls} call(s) (${how}): ` +
        (sources.has("priced") && sources.size === 1
          ? `every call was priced from the price table, so the price of ${row.model} is likely wrong (models.pricing)`
          : `the estimated calls are the first to check`),
    );
  } else if (row.provider !== null)
    row.explain.push(
      `the provider billed ${usd(row.provider)} for ${row.model}, and the ledger has no call of it that day`,
    );
  else
    row.explain.push(
      `${row.providerTokens ?? 0} tokens at the provider, ${row.familiarTokens} in the ledger (${how})`,
    );
  row.suspects = sorted.slice(0, 20).map(named);
}
