/** Result shape every benchmark returns, and the readable table printed from it. */

/** One line of a benchmark's table. */
export interface Row {
  metric: string;
  value: string;
  /** Human-readable target, e.g. `< 400 ms`. */
  target?: string;
  /** Whether the target is met (undefined when there is no target). */
  pass?: boolean;
}

export interface BenchResult {
  name: string;
  title: string;
  rows: Row[];
  /** Raw figures for the JSON summary. */
  data: Record<string, unknown>;
  /** Seconds the benchmark took. */
  seconds?: number;
}

/** Sizes and repeat counts, from the command line (see bench/run.ts --help). */
export interface BenchOptions {
  runs: number;
  coldStartRuns: number;
  rssTurns: number;
  /** Turns of the load-peak benchmark (at concurrency 100). */
  loadTurns: number;
  /** Seconds load-peak waits after the load before reading RSS again. */
  settleSeconds: number;
  overheadTurns: number;
  throughputTurns: number;
  telegramTurns: number;
  storeMessages: number;
  memoryNotes: number;
  /** Vector size of the memory benchmark (text-embedding-3-small: 1536). */
  embeddingDims: number;
  heartbeatTicks: number;
  /** Soak: how long the mixed load runs (seconds; ticks of ~1 s). Default 120; hours for the chart. */
  soakSeconds: number;
  /** Pairs of `true` runs (plain, sandboxed) for the sandbox overhead. */
  sandboxRuns: number;
  /** Extra node flags for daemons (e.g. --cpu-prof). */
  nodeFlags: string[];
}

/** Formats a table of rows under a title. */
export function formatTable(r: BenchResult): string {
  const head = ["metric", "value", "target", ""];
  const lines = r.rows.map((x) => [
    x.metric,
    x.value,
    x.target ?? "",
    x.pass === undefined ? "" : x.pass ? "ok" : "MISSED",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [
    `## ${r.title}${r.seconds !== undefined ? ` (${r.seconds.toFixed(1)} s)` : ""}`,
    fmt(head),
    fmt(widths.map((w) => "-".repeat(w))),
    ...lines.map(fmt),
  ].join("\n");
}
