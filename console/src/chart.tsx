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
}) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const box = el.current;
    if (!box) return;
    const xs = props.days.map((d) => Date.parse(`${d}T12:00:00Z`) / 1000);
    const sums: number[][] = [];
    let run = props.days.map(() => 0);
    for (const s of props.series) {
      run = run.map((v, i) => v + (s.values[i] ?? 0));
      sums.push(run);
    }
    const order = props.series.map((_, i) => i).reverse();
    const bars = uPlot.paths.bars!({ size: [0.7, 40] });
    const width = (): number => Math.max(280, box.clientWidth);
    const opts: uPlot.Options = {
      width: width(),
      height: 260,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: "currentColor", grid: { show: false } },
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
  }, [props.days, props.series, props.format, props.axis]);
  return <div class="chart" ref={el} role="img" aria-label="usage per day, stacked" />;
}
