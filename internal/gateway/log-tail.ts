/**
 * A bounded ring buffer of recent log lines for `logs.tail`, fed by tapping the root logger's
 * destination stream (the same scrubbed lines that go to stdout, so no secrets).
 */
import pino from "pino";
import type { Logger } from "../log/logger.js";

interface Writable {
  write(line: string): unknown;
}

export class LogTail {
  private lines: string[] = [];
  private listeners = new Set<(line: string) => void>();
  private restore: (() => void) | undefined;

  constructor(private max = 500) {}

  /** Taps `logger`'s stream. Returns false when the stream is not reachable (logs.tail then answers unavailable). */
  attach(logger: Logger): boolean {
    const stream = (logger as unknown as Record<symbol, Writable | undefined>)[pino.symbols.streamSym];
    if (!stream || typeof stream.write !== "function") return false;
    const original = stream.write.bind(stream);
    stream.write = (line: string) => {
      this.push(line);
      return original(line);
    };
    this.restore = () => {
      stream.write = original;
    };
    return true;
  }

  detach(): void {
    this.restore?.();
    this.restore = undefined;
    this.listeners.clear();
  }

  get attached(): boolean {
    return this.restore !== undefined;
  }

  private push(line: string): void {
    const l = line.endsWith("\n") ? line.slice(0, -1) : line;
    this.lines.push(l);
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
    for (const fn of this.listeners) fn(l);
  }

  /** The last `n` lines, oldest first, parsed when they are JSON. */
  tail(n: number): unknown[] {
    return this.lines.slice(-n).map(parseLine);
  }

  follow(fn: (line: unknown) => void): () => void {
    const wrapped = (l: string): void => fn(parseLine(l));
    this.listeners.add(wrapped);
    return () => this.listeners.delete(wrapped);
  }
}

function parseLine(l: string): unknown {
  try {
    return JSON.parse(l);
  } catch {
    return l;
  }
}
