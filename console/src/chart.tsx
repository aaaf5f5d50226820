/**
 * The usage chart: stacked bars per day with uPlot (~50 KiB, canvas, no dependencies). Stacking is
 * done here: each drawn series is the running sum up to it, drawn largest first so smaller ones sit
 * on top; the legend shows each series' own value.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ChartSeries {
  label: string;
  values: number[];
}

const COLORS = ["#2b5cd9", "#e07b00", "#1a9e6b", "#c2185b", "#7b4fd6", "#00838f", "#8d6e63", "#607d8b"];

export function StackedBars(props: {
  days: string[];
  series: ChartSeries[];
  /** Formats a value for the legend. */
  format: (v: number) => string;
  /** Formats an axis tick (short). */
  axis: (v: number) => string;
  /** A limit drawn as a dashed line across the days (the daily budget), with its label. */
  limit?: { value: number; label: string } | undefined;
}) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const box = el.current;
    if (!box) return;
    const xs = props.days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const sums: number[][] = [];
    let run = props.days.map(() => 0);
    for (const s of props.series) {
      run = run.map((v, i) => v + (s.values[i] ?? 0));
      sums.push(run);
    }
    const order = props.series.map((_, i) => i).reverse();
    const bars = uPlot.paths.bars!({ size: [0.7, 40] });
    const width = (): number => Math.max(280, box.clientWidth);
    const limit = props.limit;
    // The line's colour and the label's font follow the page's tokens (light or dark).
    const css = getComputedStyle(box);
    const lineColor = css.getPropertyValue("--bad").trim() || "#b3261e";
    const textColor = css.getPropertyValue("--muted").trim() || "#5b6471";
    const opts: uPlot.Options = {
      width: width(),
      height: 260,
      scales: {
        // Half a day either side: the first and last bars are whole, not cut at the edges.
        x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] },
        // The limit stays in view: the scale reaches past it, so the bars are read against it.
        y: {
          range: (_u, _min, max) => {
            const top = Math.max(max, limit?.value ?? 0);
            return [0, top > 0 ? top * 1.12 : 1];
          },
        },
      },
      hooks: limit
        ? {
            draw: [
              (u: uPlot) => {
                const ctx = u.ctx;
                const y = Math.round(u.valToPos(limit.value, "y", true)) + 0.5;
                const { left, width: w } = u.bbox;
                ctx.save();
                ctx.strokeStyle = lineColor;
                ctx.lineWidth = Math.max(1, devicePixelRatio * 1.5);
                ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
                ctx.beginPath();
                ctx.moveTo(left, y);
                ctx.lineTo(left + w, y);
                ctx.stroke();
                ctx.setLineDash([]);
                ctx.fillStyle = textColor;
                ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
                ctx.textAlign = "left";
                ctx.textBaseline = "bottom";
                ctx.fillText(limit.label, left + 6 * devicePixelRatio, y - 4 * devicePixelRatio);
                ctx.restore();
              },
            ],
          }
        : {},
      axes: [
        {
          stroke: "currentColor",
          grid: { show: false },
          // One tick per day at most (never hours): "Nov 27".
          incrs: [86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400],
          values: (_u, vals) =>
            vals.map((v) =>
              new Date(v * 1000).toLocaleDateString(undefined, {
                month: "short",
                day: "numeric",
                timeZone: "UTC",
              }),
            ),
        },
        { stroke: "currentColor", size: 64, values: (_u, vals) => vals.map((v) => props.axis(v)) },
      ],
      legend: { live: true },
      cursor: { points: { show: false } },
      series: [
        { label: "Day", value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...order.map((i) => ({
          label: props.series[i]!.label,
          stroke: COLORS[i % COLORS.length]!,
          fill: COLORS[i % COLORS.length]!,
          paths: bars,
          points: { show: false },
          value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) =>
            idx == null ? "" : props.format(props.series[i]!.values[idx] ?? 0),
        })),
      ],
    };
    // A day without usage draws no bar (null), rather than a hairline at zero.
    const data = order.map((i) => sums[i]!.map((v) => (v > 0 ? v : null)));
    const plot = new uPlot(opts, [xs, ...data] as uPlot.AlignedData, box);
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 260 }));
    ro.observe(box);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [props.days, props.series, props.format, props.axis, props.limit?.value, props.limit?.label]);
  return (
    <div
      class="chart"
      ref={el}
      role="img"
      aria-label={`usage per day, stacked${props.limit ? `; ${props.limit.label}` : ""}`}
      data-limit={props.limit?.value}
    />
  );
}
