/**
 * Log lines to stdout, written once per event-loop turn instead of once per line.
 *
 * Why: stdout to a pipe or journald's socket is a synchronous write(2) in Node, and under load (100
 * turns in flight) the daemon's one info line per turn was a write syscall per turn, ~0.1-0.3 ms each
 * on a busy 2-core machine (issue 26). Lines logged during one turn of the loop now leave in one write
 * from `setImmediate`, in order. Nothing is held longer than that turn, and whatever is pending when
 * the process exits (normal exit, `process.exit`, an uncaught exception) is written synchronously from
 * the `exit` handler; only a SIGKILL in the same tick could lose the last lines.
 */
export interface LineSink {
  write(text: string): unknown;
}

/** A writer that batches lines per event-loop turn into `sink` (default: process.stdout). */
export function batchedLines(sink: LineSink = process.stdout): (line: string) => void {
  let pending: string[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.length === 1 ? pending[0]! : pending.join("");
    pending = [];
    sink.write(text);
  };
  process.once("exit", flush);
  return (line: string) => {
    pending.push(line);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}
