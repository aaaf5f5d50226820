/**
 * How much disk the workspace takes, for `tools.exec.sandbox.workspace_disk_mb`: allocated blocks
 * of everything beneath it (links not followed, each inode counted once), so sparse files count
 * what they really use. The walk is capped; a capped walk is a lower bound and says so.
 */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** The measured size. */
export interface WorkspaceUsage {
  bytes: number;
  /** False when the entry cap stopped the walk (then `bytes` is a lower bound). */
  complete: boolean;
}

/** Measures `root`, looking at no more than `maxEntries` entries. */
export function workspaceUsage(root: string, maxEntries = 500_000): WorkspaceUsage {
  let bytes = 0;
  let seen = 0;
  const inodes = new Set<string>();
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (++seen > maxEntries) return { bytes, complete: false };
      const p = join(dir, name);
      const st = lstatSync(p, { throwIfNoEntry: false, bigint: false });
      if (!st) continue;
      const key = `${st.dev}:${st.ino}`;
      if (inodes.has(key)) continue;
      inodes.add(key);
      bytes += st.blocks * 512;
      if (st.isDirectory()) stack.push(p);
    }
  }
  return { bytes, complete: true };
}
