/**
 * Instance lock: `<data_dir>/familiar.lock` holds the pid of the daemon that owns the data dir.
 * A lock whose pid is no longer alive is stale and taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { resolve } from "node:path";

/**
 * Lock files held by this process. A lock file naming our own pid is normally stale (a previous life
 * of a container whose daemon always gets the same pid), unless this very process still holds it.
 */
const held = new Set<string>();

/** Thrown when another live daemon owns the data dir. */
export class InstanceLockedError extends Error {
  readonly code = "INSTANCE_LOCKED";
  constructor(
    readonly lockFile: string,
    readonly pid: number,
  ) {
    super(`another familiar daemon (pid ${pid}) is already running on this data dir (${lockFile})`);
    this.name = "InstanceLockedError";
  }
}

export interface InstanceLock {
  file: string;
  release(): void;
}

/** Acquires the lock or throws {@link InstanceLockedError}. */
export function acquireInstanceLock(dataDir: string): InstanceLock {
  mkdirSync(dataDir, { recursive: true });
  const file = resolve(dataDir, "familiar.lock");
  if (held.has(file)) throw new InstanceLockedError(file, process.pid);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(file);
      let released = false;
      return {
        file,
        release() {
          if (released) return;
          released = true;
          held.delete(file);
          try {
            if (readFileSync(file, "utf8").trim() === String(process.pid)) unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      let pid: number;
      try {
        pid = Number(readFileSync(file, "utf8").trim());
      } catch {
        continue; // vanished between open and read: retry
      }
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new InstanceLockedError(file, pid);
      }
      // Stale (dead pid, garbage, or our own pid from a previous life): take it over.
      try {
        unlinkSync(file);
      } catch {
        /* raced with another taker; retry */
      }
    }
  }
  throw new Error(`could not acquire instance lock ${file}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
