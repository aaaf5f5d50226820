/**
 * Opening workspace paths for bwrap's `--bind-fd` / `--ro-bind-fd` without following a symlink at any
 * step (the same walk as safe-open.ts, synchronous): bwrap follows symlinks in a bind SOURCE path, so
 * binding `.git/hooks` by path would bind whatever a command running alongside swapped in for it
 * (`ln -s ~/.ssh .git/hooks`). A descriptor is the thing that was checked.
 */
import { closeSync, constants, openSync } from "node:fs";
import { isAbsolute, relative } from "node:path";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Opens `abs` (beneath `root`) with O_NOFOLLOW on every component; undefined when it cannot. */
export function openStrict(root: string, abs: string): number | undefined {
  const rel = relative(root, abs);
  if (!rel || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  const parts = rel.split("/");
  let fd: number;
  try {
    fd = openSync(root, O_RDONLY | O_DIRECTORY);
  } catch {
    return undefined;
  }
  for (let i = 0; i < parts.length; i++) {
    const last = i === parts.length - 1;
    try {
      const next = openSync(
        `/proc/self/fd/${fd}/${parts[i] ?? ""}`,
        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (last ? 0 : O_DIRECTORY),
      );
      closeSync(fd);
      fd = next;
    } catch {
      closeSync(fd);
      return undefined;
    }
  }
  return fd;
}

/** Descriptors to hand to bwrap, numbered as the child will see them (from `firstChildFd`). */
export interface OpenedBinds {
  /** Parent-side descriptors, in child order (close them after spawning). */
  fds: number[];
  pinFds: [number, string][];
  readOnlyFds: [number, string][];
}

/** Opens every pin and read-only path it can; the rest (gone, or a symlink now) is skipped. */
export function openBinds(
  root: string,
  pins: readonly string[],
  readOnly: readonly string[],
  firstChildFd: number,
): OpenedBinds {
  const out: OpenedBinds = { fds: [], pinFds: [], readOnlyFds: [] };
  const add = (p: string, into: [number, string][]): void => {
    const fd = openStrict(root, p);
    if (fd === undefined) return;
    into.push([firstChildFd + out.fds.length, p]);
    out.fds.push(fd);
  };
  for (const p of pins) add(p, out.pinFds);
  for (const p of readOnly) add(p, out.readOnlyFds);
  return out;
}

/** Closes descriptors, ignoring ones already closed. */
export function closeAll(fds: readonly number[]): void {
  for (const fd of fds)
    try {
      closeSync(fd);
    } catch {
      /* already closed */
    }
}
