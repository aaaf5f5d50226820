/**
 * Untrusted documents are parsed in a child process, never on the daemon's event loop (issue 32: a
 * 66 KB PDF held the daemon's thread for minutes and its RSS at 2.28 GB). The child is a plain Node
 * process running `parse-child.ts`, and it is bounded on every side:
 * - memory: V8's heap cap (`--max-old-space-size`) for JavaScript objects, plus a watchdog that reads
 *   the child's VmRSS from /proc every 100 ms and kills it past `memoryMb`; the heap cap alone does not
 *   bound PDF.js's typed arrays (external memory), the watchdog does;
 * - CPU time: killed (SIGKILL) after `timeoutMs`; it runs at a lower priority (nice 10) meanwhile, so
 *   on a one-core machine the daemon still gets the CPU;
 * - output: at most `maxChars` characters are kept by the child, and the parent stops reading (and
 *   kills it) past a byte cap derived from that;
 * - one parse at a time per daemon, so ten bombs at once cost one child, not ten;
 * - an empty environment (no tokens, no keys);
 * - no orphan: where util-linux `prlimit` exists the child also gets RLIMIT_CPU (timeout + 2 s), so a
 *   child whose daemon was killed (SIGKILL, OOM) cannot go on burning CPU; on a normal exit the daemon
 *   kills any child still running.
 * A child that is killed or fails becomes one MediaFailure with a message for the chat; the daemon
 * goes on. Where /proc is missing (not Linux) only the heap cap and the timeout hold.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { setPriority } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot } from "../config/package-root.js";
import { MediaFailure } from "./media-errors.js";

/** Limits of one parse. */
export interface ParseLimits {
  maxChars: number;
  /** Wall-clock time before the child is killed. */
  timeoutMs: number;
  /** Resident memory before the child is killed. */
  memoryMb: number;
}

export interface ParsedPdf {
  text: string;
  pages: number;
  truncated: boolean;
}

/** How to start the child: this file's sibling (sources via tsx, or the tsc build), else the build beside the bundle. */
function childCommand(): { args: string[]; cwd: string } {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = packageRoot();
  const ts = join(here, "parse-child.ts");
  if (import.meta.url.endsWith(".ts") && existsSync(ts)) return { args: ["--import", "tsx", ts], cwd: root };
  const js = join(here, "parse-child.js");
  if (existsSync(js)) return { args: [js], cwd: root };
  return { args: [join(root, "dist", "internal", "media", "parse-child.js")], cwd: root };
}

let queue: Promise<unknown> = Promise.resolve();
const PRLIMIT = ["/usr/bin/prlimit", "/bin/prlimit"].find((p) => existsSync(p));

/** Children still running, killed if the daemon exits first. */
const live = new Set<ChildProcess>();
let exitHook = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once("close", () => live.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}

/** Parses a PDF in the bounded child; one at a time. Throws MediaFailure for the chat. */
export function parsePdfInChild(data: Buffer, name: string, limits: ParseLimits): Promise<ParsedPdf> {
  const run = queue.then(
    () => runChild(data, name, limits),
    () => runChild(data, name, limits),
  );
  queue = run.catch(() => undefined);
  return run;
}

/** VmRSS of `pid` in bytes, or undefined when /proc cannot tell. */
async function rssOf(pid: number): Promise<number | undefined> {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"));
    return m?.[1] ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function runChild(data: Buffer, name: string, limits: ParseLimits): Promise<ParsedPdf> {
  const { args, cwd } = childCommand();
  // Half the budget for V8's heap; the rest is code, buffers and PDF.js's typed arrays.
  const heapMb = Math.max(16, Math.floor(limits.memoryMb / 2));
  const nodeArgs = [
    `--max-old-space-size=${heapMb}`,
    "--max-semi-space-size=2",
    ...args,
    JSON.stringify({ kind: "pdf", maxChars: limits.maxChars }),
  ];
  // prlimit sets the limit and then execs node: the pid stays the child's.
  const cpuS = Math.ceil(limits.timeoutMs / 1000) + 2;
  const [cmd, argv] = PRLIMIT
    ? [PRLIMIT, [`--cpu=${cpuS}:${cpuS + 1}`, "--", process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  const child = spawn(cmd, argv, { cwd, env: {}, stdio: ["pipe", "pipe", "pipe"] });
  track(child);
  if (child.pid !== undefined)
    try {
      setPriority(child.pid, 10);
    } catch {
      /* not permitted here: the time limit still holds */
    }
  // JSON escapes can take six bytes per character; anything beyond is not a well-behaved child.
  const maxOut = limits.maxChars * 6 + 64 * 1024;
  return new Promise<ParsedPdf>((resolve, reject) => {
    let killedFor: string | undefined;
    const kill = (why: string): void => {
      killedFor ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(
      () => kill(`it took longer than ${Math.round(limits.timeoutMs / 1000)} s to read`),
      limits.timeoutMs,
    );
    let polling = false;
    const watch = setInterval(() => {
      if (polling || child.pid === undefined) return;
      polling = true;
      void rssOf(child.pid).then((rss) => {
        polling = false;
        if (rss !== undefined && rss > limits.memoryMb * 1024 * 1024)
          kill(`it needed more than ${limits.memoryMb} MB of memory to read`);
      });
    }, 100);
    const out: Buffer[] = [];
    let outBytes = 0;
    child.stdout.on("data", (c: Buffer) => {
      outBytes += c.length;
      if (outBytes > maxOut) return kill("its text was larger than the limit");
      out.push(c);
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => {
      if (err.length < 2000) err += c.toString("utf8");
    });
    child.stdin.on("error", () => undefined); // a child killed early closes its stdin
    child.stdin.end(data);
    child.on("error", (e) => {
      clearTimeout(timer);
      clearInterval(watch);
      reject(
        new MediaFailure("MEDIA_EXTRACT_FAILED", `I could not read the PDF "${name}": ${e.message}`, {
          cause: e,
        }),
      );
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      clearInterval(watch);
      if (killedFor)
        return reject(
          new MediaFailure("MEDIA_TOO_LARGE", `I stopped reading the PDF "${name}": ${killedFor}.`),
        );
      let msg:
        { ok: boolean; message?: string; text?: string; pages?: number; truncated?: boolean } | undefined;
      try {
        msg = JSON.parse(Buffer.concat(out).toString("utf8")) as typeof msg;
      } catch {
        msg = undefined;
      }
      if (msg?.ok && typeof msg.text === "string" && typeof msg.pages === "number")
        return resolve({
          text: msg.text.slice(0, limits.maxChars),
          pages: msg.pages,
          truncated: msg.truncated === true,
        });
      // A heap cap hit ends the child with an out-of-memory abort rather than our JSON.
      if (/heap out of memory|Allocation failed/i.test(err))
        return reject(
          new MediaFailure(
            "MEDIA_TOO_LARGE",
            `I stopped reading the PDF "${name}": it needed more than ${limits.memoryMb} MB of memory to read.`,
          ),
        );
      reject(
        new MediaFailure(
          "MEDIA_EXTRACT_FAILED",
          `I could not read the PDF "${name}": ${msg?.message ?? `the reader stopped (exit ${code ?? "signal"})`}`,
        ),
      );
    });
  });
}
