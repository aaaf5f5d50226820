/**
 * `familiar logs`: the running daemon's log, the last lines then new ones as they come (the gateway's
 * `logs.tail`, the same scrubbed lines the daemon writes to its stdout: no secrets), in the daemon's
 * human format (`10:07:03 INFO  gateway listening ...`) or as JSON lines with `--json`.
 *
 * With no daemon reachable it prints the end of `<data_dir>/familiar.log` (written by a daemon that
 * `familiar restart` started) and says where else the log is (journald under systemd).
 */
import { existsSync, readFileSync } from "node:fs";
import { prettyLine } from "../log/logger.js";
import { dataDirOf } from "../gateway/runtime-file.js";
import { connectAsOwner } from "./owner-client.js";
import { daemonLogFile } from "./stop.js";
import { safeText } from "./terminal-text.js";

export interface LogsOptions {
  config: string;
  url?: string;
  token?: string;
  lines?: string;
  follow?: boolean;
  json?: boolean;
}

/** One record (parsed JSON from `logs.tail`, or a raw line of the log file) as one printed line. */
function show(record: unknown, json: boolean): string {
  const raw = typeof record === "string" ? record.trimEnd() : JSON.stringify(record);
  return json ? `${raw}\n` : safeText(prettyLine(raw));
}

/** Exit code: 0 printed (and, following, until Ctrl-C or the daemon stops), 1 nothing to show. */
export async function logsCommand(opts: LogsOptions): Promise<number> {
  const n = Math.min(500, Math.max(1, Number(opts.lines ?? 50) || 50));
  const json = opts.json === true;
  let client;
  try {
    client = await connectAsOwner(opts, "familiar-logs");
  } catch (err) {
    const file = daemonLogFile(dataDirOf(opts.config));
    if (existsSync(file)) {
      const tail = readFileSync(file, "utf8").split("\n").filter(Boolean).slice(-n);
      for (const l of tail) process.stdout.write(show(l, json));
      process.stderr.write(
        `familiar logs: the daemon is not reachable (${(err as Error).message}); above: the end of ${file}\n`,
      );
      return 0;
    }
    process.stderr.write(
      `familiar logs: the daemon is not reachable (${(err as Error).message}); under systemd its log is in journald: journalctl --user -u familiar -f\n`,
    );
    return 1;
  }
  const follow = opts.follow !== false;
  if (follow) client.on("log", (line) => process.stdout.write(show(line, json)));
  const r = await client.request<{ lines: unknown[] }>("logs.tail", { lines: n, follow });
  for (const l of r.lines) process.stdout.write(show(l, json));
  if (!follow) {
    await client.close();
    return 0;
  }
  const c = client;
  return new Promise<number>((res) => {
    c.onClose(() => {
      process.stderr.write("familiar logs: the daemon closed the connection (stopped or restarting)\n");
      res(0);
    });
    process.once("SIGINT", () => void c.close().then(() => res(0)));
  });
}
