/**
 * Check the bill: the owner picks a provider's usage export (OpenAI cost or activity CSV, OpenRouter
 * activity CSV) and sees, per day and model, the provider's figure beside Familiar's ledger, the
 * difference and the calls that explain it; the same comparison as `familiar usage --reconcile`.
 */
import { useState } from "preact/hooks";
import { gateway } from "../gateway";
import { Card, Empty, ErrorLine, fmtCost, fmtInt, Table } from "../ui";
import type { ReconcileReport } from "../../../internal/agent/usage/reconcile-wire";

export function ReconcileCard() {
  const [report, setReport] = useState<ReconcileReport | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const pick = async (file: File | undefined): Promise<void> => {
    if (!file) return;
    setBusy(true);
    setError(undefined);
    try {
      setReport(await gateway.call<ReconcileReport>("usage.reconcile", { text: await file.text() }));
    } catch (err) {
      setReport(undefined);
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const differs = report?.rows.filter((r) => !r.matches) ?? [];
  return (
    <Card title="Check against the provider's bill" id="reconcile">
      <label>
        Usage export (CSV){" "}
        <input
          type="file"
          accept=".csv,text/csv"
          id="reconcile-file"
          disabled={busy}
          onChange={(e) => void pick((e.currentTarget as HTMLInputElement).files?.[0])}
        />
      </label>
      <ErrorLine error={error} />
      {report ? (
        <>
          <Table id="reconcile-table" label="provider against ledger">
            <thead>
              <tr>
                <th>Day (UTC)</th>
                <th>Model</th>
                <th class="num">Provider</th>
                <th class="num">Familiar</th>
                <th class="num">Difference</th>
                <th class="num">Calls</th>
              </tr>
            </thead>
            <tbody>
              {report.rows.map((r) => (
                <tr key={`${r.day}|${r.model}`} data-matches={r.matches ? "yes" : "no"}>
                  <td>{r.day}</td>
                  <td>{r.model}</td>
                  <td class="num">
                    {r.provider === null ? `${fmtInt(r.providerTokens ?? 0)} tok` : fmtCost(r.provider)}
                  </td>
                  <td class="num">
                    {r.provider === null ? `${fmtInt(r.familiarTokens)} tok` : fmtCost(r.familiar)}
                  </td>
                  <td class="num">{r.matches ? "—" : fmtCost(r.difference)}</td>
                  <td class="num">{r.calls}</td>
                </tr>
              ))}
            </tbody>
          </Table>
          {differs.length === 0 ? (
            <Empty>No difference: the ledger matches the export.</Empty>
          ) : (
            differs.map((r) => (
              <details key={`${r.day}|${r.model}`} open>
                <summary>
                  {r.day} {r.model}
                </summary>
                <ul>
                  {r.explain.map((e, i) => (
                    <li key={i}>{e}</li>
                  ))}
                  {r.suspects.slice(0, 10).map((c) => (
                    <li key={c.id}>
                      #{c.id} {c.kind ?? "call"} {c.requestId ?? ""} {c.jobId ? `job ${c.jobId}` : ""}:{" "}
                      {fmtCost(c.cost)} ({c.source ?? "older row"})
                    </li>
                  ))}
                </ul>
              </details>
            ))
          )}
        </>
      ) : (
        <Empty>Pick an export from platform.openai.com/usage or openrouter.ai/activity.</Empty>
      )}
    </Card>
  );
}
