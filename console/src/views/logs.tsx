/** Logs: the recent records and a live tail (logs.tail with follow), filtered by level. */
import { useEffect, useRef, useState } from "preact/hooks";
import { gateway } from "../gateway";
import { useConnState } from "../hooks";
import { Card, ErrorLine } from "../ui";

interface LogLine {
  level?: number | string;
  time?: number | string;
  msg?: string;
  [k: string]: unknown;
}
const LEVELS: [number, string][] = [
  [10, "trace"],
  [20, "debug"],
  [30, "info"],
  [40, "warn"],
  [50, "error"],
  [60, "fatal"],
];
const levelNum = (l: LogLine["level"]): number =>
  typeof l === "number" ? l : (LEVELS.find(([, n]) => n === l)?.[0] ?? 30);
const levelName = (n: number): string => [...LEVELS].reverse().find(([v]) => n >= v)?.[1] ?? "info";
const MAX = 1000;

export function Logs() {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [min, setMin] = useState(30);
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const conn = useConnState();
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  useEffect(() => {
    if (conn !== "open") return;
    let live = true;
    const parse = (l: unknown): LogLine =>
      typeof l === "string" ? (JSON.parse(l) as LogLine) : (l as LogLine);
    gateway.call<{ lines: unknown[] }>("logs.tail", { lines: 500, follow: true }).then(
      (r) => live && setLines(r.lines.map(parse)),
      (e: unknown) => live && setError((e as Error).message),
    );
    const off = gateway.on("log", (l) => {
      if (!live || pausedRef.current) return;
      setLines((xs) => [...xs.slice(-(MAX - 1)), parse(l)]);
    });
    return () => {
      live = false;
      off();
    };
  }, [conn]);
  const shown = lines.filter((l) => levelNum(l.level) >= min);
  return (
    <Card
      title="Logs"
      id="logs"
      actions={
        <>
          <label>
            Level{" "}
            <select
              value={String(min)}
              onChange={(e) => setMin(Number(e.currentTarget.value))}
              aria-label="minimum level"
            >
              {LEVELS.map(([v, n]) => (
                <option key={v} value={String(v)}>
                  {n}+
                </option>
              ))}
            </select>
          </label>
          <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>
            {paused ? "Resume" : "Pause"}
          </button>
        </>
      }
    >
      <ErrorLine error={error} />
      <ol class="log" aria-live="polite">
        {shown.slice(-300).map((l, i) => {
          const lv = levelName(levelNum(l.level));
          const { level: _l, time, msg, pid: _p, hostname: _h, ...rest } = l;
          const extra = Object.keys(rest).length ? JSON.stringify(rest) : "";
          return (
            <li key={i} class={`lv-${lv}`} data-level={lv}>
              <span class="t">{time ? new Date(time).toLocaleTimeString() : ""}</span>{" "}
              <span class="lv">{lv}</span> {msg}{" "}
              {typeof (rest as Record<string, unknown>).requestId === "string" && (
                <a
                  class="req"
                  href={`#/traces/${encodeURIComponent((rest as Record<string, string>).requestId!)}`}
                  title="open this turn's trace"
                >
                  trace
                </a>
              )}{" "}
              {extra && <span class="muted">{extra}</span>}
            </li>
          );
        })}
      </ol>
    </Card>
  );
}
