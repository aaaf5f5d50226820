/**
 * Logging: pino JSON lines to stdout (journald-friendly), pretty output on a TTY.
 * Secrets are redacted twice: by key path (`redactKeys` on the logged object, pino's `redact` on a
 * child logger's top-level bindings) and by value (every known secret string is replaced wherever it appears, e.g. inside an HTTP error message or a config dump).
 */
import pino, { type Logger, type LevelWithSilent, type DestinationStream } from "pino";
import { batchedLines } from "./line-batch.js";
import { CENSOR, redactKeys, TOP_LEVEL_SECRET_KEYS } from "./redact-keys.js";

export type { Logger } from "pino";

/** Holds the set of secret values to scrub from every log line; updated on config reload. */
export class SecretScrubber {
  private secrets: string[] = [];
  set(values: Iterable<string | undefined>): void {
    this.secrets = [
      ...new Set([...values].filter((v): v is string => typeof v === "string" && v.length >= 6)),
    ].sort((a, b) => b.length - a.length);
  }
  scrub(line: string): string {
    let out = line;
    for (const s of this.secrets) if (out.includes(s)) out = out.split(s).join(CENSOR);
    return out;
  }
}

export interface LoggerOptions {
  level?: LevelWithSilent;
  pretty?: boolean;
  scrubber?: SecretScrubber;
  /** Destination for lines; defaults to stdout. */
  destination?: NodeJS.WritableStream;
}

/** Creates the root logger. The level can be changed later with `logger.level = ...`. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const scrubber = opts.scrubber ?? new SecretScrubber();
  const out = opts.destination ?? process.stdout;
  const pretty = opts.pretty ?? (out === process.stdout && process.stdout.isTTY === true);
  // JSON lines to the process's stdout are batched per event-loop turn (see line-batch.ts); a given
  // destination (tests, the console's capture) and the pretty TTY output get each line as it comes.
  const emit =
    opts.destination === undefined && !pretty
      ? batchedLines(process.stdout)
      : (line: string) => out.write(line);
  const stream: DestinationStream = {
    write(line: string) {
      emit(pretty ? prettyLine(scrubber.scrub(line)) : scrubber.scrub(line));
    },
  };
  return pino(
    {
      level: opts.level ?? "info",
      base: undefined,
      // Top-level paths only: pino turns each into a stringifier for that one key, which also covers a
      // child logger's bindings; a path starting with a wildcard would run fast-redact over every field
      // of every line. Nested keys are censored by `redactKeys` on the logged object.
      redact: { paths: TOP_LEVEL_SECRET_KEYS, censor: CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: (o) => redactKeys(o) },
    },
    stream,
  );
}

/** Minimal human format for TTYs; avoids loading pino-pretty's worker machinery on the hot path. */
export function prettyLine(json: string): string {
  try {
    const o = JSON.parse(json) as Record<string, unknown>;
    const { time, level, msg, module, ...rest } = o;
    const t = typeof time === "string" ? time.slice(11, 19) : "";
    const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : "";
    const mod = module ? `[${String(module)}] ` : "";
    return `${t} ${String(level).toUpperCase().padEnd(5)} ${mod}${String(msg ?? "")}${extra}\n`;
  } catch {
    return json;
  }
}

/** A logger that drops everything, for tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
