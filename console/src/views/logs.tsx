/**
 * Logs: the recent records and a live tail (logs.tail with follow), newest first, as readable lines
 * (time, level, module, message) whose other fields open on click; filtered by level and by words.
 */
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
/** Fields every record has, shown on the line itself (or not at all). */
const LINE_FIELDS = new Set(["level", "time", "msg", "pid", "hostname", "module"]);

/** A field's value as text: strings as they are, the rest as compact JSON. */
const text = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));

/** Does the record mention every word of the search (in its message or any field)? */
function matches(l: LogLine, words: string[]): boolean {
  if (!words.length) return true;
  const hay = Object.values(l).map(text).join(" ").toLowerCase();
  return words.every((w) => hay.includes(w));
}

export function Logs() {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [min, setMin] = useState(30);
  const [paused, setPaused] = useState(false);
  const [query, setQuery] = useState("");
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
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  // Newest first: what just happened is at the top.
  const shown = lines.filter((l) => levelNum(l.level) >= min && matches(l, words)).reverse();
  return (
    <Card
      title="Logs"
      id="logs"
      actions={
        <>
          <input
            type="search"
            id="log-q"
            aria-label="search the log"
            placeholder="Search"
            value={query}
            onInput={(e) => setQuery(e.currentTarget.value)}
          />
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
        {shown.slice(0, 300).map((l, i) => (
          <LogRecord key={`${String(l.time)}-${i}`} l={l} />
        ))}
      </ol>
      {shown.length === 0 && (
        <p class="empty">
          {lines.length ? "No record matches the level and search." : "No log records yet."}
        </p>
      )}
    </Card>
  );
}

/** One record: a readable line; its other fields (request ids, codes, durations) open on demand. */
function LogRecord(props: { l: LogLine }) {
  const l = props.l;
  const lv = levelName(levelNum(l.level));
  const fields = Object.entries(l).filter(([k]) => !LINE_FIELDS.has(k));
  const req = typeof l.requestId === "string" ? l.requestId : undefined;
  const line = (
    <>
      <span class="t">{l.time ? new Date(l.time).toLocaleTimeString() : ""}</span>{" "}
      <span class="lv">{lv}</span> {typeof l.module === "string" && <span class="mod">{l.module}</span>}{" "}
      <span class="m">{l.msg}</span>
      {req && (
        <>
          {" "}
          <a class="req" href={`#/traces/${encodeURIComponent(req)}`} title="open this turn's trace">
            trace
          </a>
        </>
      )}
    </>
  );
  return (
    <li class={`lv-${lv}`} data-level={lv} data-time={l.time ? new Date(l.time).getTime() : undefined}>
      {fields.length ? (
        <details>
          <summary>
            {line} <span class="nf">{fields.length} fields</span>
          </summary>
          <dl class="log-fields">
            {fields.map(([k, v]) => (
              <>
                <dt key={`k-${k}`}>{k}</dt>
                <dd key={`v-${k}`}>{text(v)}</dd>
              </>
            ))}
          </dl>
        </details>
      ) : (
        line
      )}
    </li>
  );
}
