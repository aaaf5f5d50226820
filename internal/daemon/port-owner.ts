/**
 * Who holds a TCP port: a port clash is the first stumble of many newcomers, and "listen EADDRINUSE"
 * alone does not say what to stop or what to change. Linux only (reads /proc); elsewhere, or when
 * the holder belongs to another user whose /proc entries we cannot read, the answer is undefined.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** A process listening on a port. */
export interface PortOwner {
  pid: number;
  /** The command line, arguments joined by spaces (cut to 120 characters). */
  command: string;
}

const LISTEN = "0A";

/** Socket inodes listening on `port`, from /proc/net/tcp and tcp6 (`proc` is for tests). */
export function listeningInodes(port: number, proc = "/proc"): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["net/tcp", "net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`${proc}/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1] ?? "";
      if (cols[3] === LISTEN && local.endsWith(`:${hexPort}`) && cols[9] !== "0") inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/** The process holding a listening socket on `port`, when /proc lets us see it. */
export function findPortOwner(port: number, proc = "/proc"): PortOwner | undefined {
  const inodes = listeningInodes(port, proc);
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`${proc}/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1]!)) return { pid: Number(pid), command: commandLine(proc, pid) };
    }
  }
  return undefined;
}

function commandLine(proc: string, pid: string): string {
  try {
    const raw = readFileSync(`${proc}/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    const cmd = raw || readFileSync(`${proc}/${pid}/comm`, "utf8").trim();
    return cmd.length > 120 ? `${cmd.slice(0, 117)}...` : cmd;
  } catch {
    return "?";
  }
}

/** "pid 123 (node server.js)" or "another program" when the holder cannot be found. */
export function describePortOwner(port: number): string {
  const owner = findPortOwner(port);
  return owner ? `pid ${owner.pid} (${owner.command})` : "another program";
}
