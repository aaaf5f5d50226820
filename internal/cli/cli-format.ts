/**
 * The CLI's one style for human output: local date-times in one format, tables with a header row.
 * JSON output (`--json`) keeps epoch ms / ISO strings; this is only what a person reads.
 */

const pad = (n: number): string => String(n).padStart(2, "0");

/** `2026-11-25 21:07:03` in the machine's local time zone; `-` for nothing. */
export function localTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "-";
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** Rows under a header, columns padded to their widest cell (the last column is not padded). */
export function formatTable(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)];
}
