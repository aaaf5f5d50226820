/**
 * `familiar usage --reconcile FILE [--provider NAME] [--json]`: the ledger beside a provider's own
 * usage export, per day and model, with the calls that explain each difference
 * (agent/usage/reconcile.ts). Reads the database read-only, like `familiar usage`. Exit code 0 when
 * every day and model agrees, 1 when one differs (so a script can watch the bill), 2 when nothing
 * was compared (a file that cannot be read or is not an export, an unknown `--provider`, no ledger);
 * docs/costs.md lists them, test/budgets/costs-ledger.test.ts runs the real CLI for each.
 */
import Database from "better-sqlite3";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { formatUsd } from "../core/money.js";
import { ExportFormatError, parseExport } from "../agent/usage/provider-export.js";
import { reconcile, type ReconcileReport } from "../agent/usage/reconcile.js";
import { hasLedgerColumns } from "../budgets/spend.js";

export interface ReconcileOptions {
  config: string;
  file: string;
  provider?: string;
  json?: boolean;
}

/** Renders a report for humans: a table, then each difference's explanation. */
export function formatReconcile(r: ReconcileReport): string {
  const money = (v: number | null): string => (v === null ? "-" : formatUsd(v));
  const head = ["day", "model", "provider", "familiar", "difference", "calls", ""];
  const rows = r.rows.map((x) => [
    x.day,
    x.model,
    x.provider === null ? `${x.providerTokens ?? 0} tok` : money(x.provider),
    x.provider === null ? `${x.familiarTokens} tok` : money(x.familiar),
    x.provider === null ? "-" : `${x.difference >= 0 ? "+" : "-"}${formatUsd(Math.abs(x.difference))}`,
    String(x.calls),
    x.matches ? "ok" : "DIFFERS",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  const out = [`${r.kind} export against providers ${r.providers.join(", ") || "(none)"}`, "", line(head)];
  out.push(...rows.map(line));
  out.push("", `total: provider ${money(r.total.provider)}, familiar ${money(r.total.familiar)}`);
  for (const x of r.rows.filter((y) => !y.matches)) {
    out.push("", `${x.day} ${x.model}:`);
    for (const e of x.explain) out.push(`  - ${e}`);
    for (const c of x.suspects.slice(0, 10))
      out.push(
        `    #${c.id} ${new Date(c.at).toISOString()} ${c.kind ?? "call"} request ${c.requestId ?? "-"}` +
          `${c.jobId ? ` job ${c.jobId}` : ""}${c.sessionKey ? ` session ${c.sessionKey}` : ""}: ` +
          `${c.input} in / ${c.output} out, ${formatUsd(c.cost)} (${c.source ?? "older row"})`,
      );
  }
  if (r.rows.length > 0 && r.rows.every((x) => x.matches))
    out.push("", "no difference: the ledger matches the export");
  return out.join("\n") + "\n";
}

/** Runs the command; returns the exit code. */
export async function reconcileCommand(
  opts: ReconcileOptions,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const { config } = loadConfigFile(opts.config, process.env, { deferSecrets: true });
  let text: string;
  try {
    text = readFileSync(opts.file, "utf8");
  } catch (e) {
    err.write(`could not read ${opts.file}: ${(e as Error).message}\n`);
    return 2;
  }
  let exp;
  try {
    exp = parseExport(text);
  } catch (e) {
    if (!(e instanceof ExportFormatError)) throw e;
    err.write(`${opts.file}: ${e.message}\n`);
    return 2;
  }
  if (opts.provider && !config.models.providers[opts.provider]) {
    err.write(
      `--provider: expected a name under models.providers (${Object.keys(config.models.providers).join(", ") || "none configured"}); got "${opts.provider}"\n`,
    );
    return 2;
  }
  const file = join(config.data_dir, "familiar.db");
  if (!existsSync(file)) {
    err.write(`no database at ${file}: nothing recorded yet\n`);
    return 2;
  }
  const db = new Database(file, { readonly: true, fileMustExist: true });
  let report: ReconcileReport;
  try {
    db.pragma("busy_timeout = 5000");
    if (!hasLedgerColumns(db)) {
      err.write(`${file} predates the usage ledger: start the daemon once to upgrade it\n`);
      return 2;
    }
    report = reconcile(db, config, exp, opts.provider);
  } finally {
    db.close();
  }
  out.write(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatReconcile(report));
  return report.rows.every((r) => r.matches) ? 0 : 1;
}
