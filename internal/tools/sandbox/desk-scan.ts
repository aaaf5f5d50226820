/**
 * Snapshots of the desk, taken before and after each sandboxed command (and each CLI engine turn),
 * and what changed between them that must be held (docs/security.md, "The desk fails closed").
 *
 * INVARIANT: the whole desk is compared, every entry at every depth, symlinks recorded as links
 * (never followed). An entry counts as unchanged only when its lstat identity is unchanged: device,
 * inode, type and mode, size, mtime AND ctime in nanoseconds. A command can reset an mtime but not a
 * ctime (any write, chmod, rename or link count change sets it to now), so no content hash is needed
 * and a large file costs the same as a small one. Folders the owner allowed by name
 * (`tools.exec.sandbox.desk_allow: [node_modules]`) are not descended into. A desk with more than
 * {@link MAX_ENTRIES} entries cannot be compared, so the caller refuses to run commands on it
 * (fail closed) rather than pass what it did not see.
 */
import { lstatSync, readdirSync, type BigIntStats } from "node:fs";
import { join } from "node:path";
import {
  beneath,
  holdReason,
  isHoldCategory,
  repositoryRoots,
  type DeskEntry,
  type EntryKind,
  type HoldCategory,
} from "../../workspace/desk-rules.js";

/** Entries compared per snapshot; more and commands are refused until the desk is smaller. */
export const MAX_ENTRIES = 200_000;

/** One entry of a snapshot. */
export interface SnapEntry extends DeskEntry {
  /** Identity and state from lstat: equal signatures mean the entry was not touched. */
  sig: string;
  size: number;
}

/** The desk at one moment. */
export interface DeskSnapshot {
  entries: Map<string, SnapEntry>;
  /** False when {@link MAX_ENTRIES} was reached: the snapshot is not the whole desk. */
  complete: boolean;
}

function kindOf(st: BigIntStats): EntryKind {
  if (st.isSymbolicLink()) return "link";
  if (st.isDirectory()) return "dir";
  return st.isFile() ? "file" : "other";
}

function signature(st: BigIntStats, kind: EntryKind): string {
  // A folder's own times change whenever a name in it does; its entries are compared one by one.
  if (kind === "dir") return `d:${st.dev}:${st.ino}:${st.mode}`;
  return `${kind}:${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.nlink}`;
}

/**
 * Takes a snapshot of `desk` (a real absolute path). `allowed` is `desk_allow`: folder names in it
 * are skipped whole.
 */
export function snapshotDesk(
  desk: string,
  allowed: ReadonlySet<string> = new Set(),
  max = MAX_ENTRIES,
): DeskSnapshot {
  const entries = new Map<string, SnapEntry>();
  const queue: string[] = [""];
  for (let i = 0; i < queue.length; i++) {
    const dirRel = queue[i] ?? "";
    let names: string[];
    try {
      names = readdirSync(dirRel ? join(desk, dirRel) : desk);
    } catch {
      continue;
    }
    for (const name of names) {
      if (entries.size >= max) return { entries, complete: false };
      const rel = dirRel ? `${dirRel}/${name}` : name;
      let st: BigIntStats;
      try {
        st = lstatSync(join(desk, rel), { bigint: true });
      } catch {
        continue; // gone meanwhile
      }
      const kind = kindOf(st);
      entries.set(rel, { rel, kind, mode: Number(st.mode), sig: signature(st, kind), size: Number(st.size) });
      const lower = name.toLowerCase();
      if (kind === "dir" && !(allowed.has(lower) && !isHoldCategory(lower))) queue.push(rel);
    }
  }
  return { entries, complete: true };
}

/** A changed entry that must be held, with why. */
export interface HeldEntry extends SnapEntry {
  category: HoldCategory;
}

/**
 * Inside a repository that existed before the command, the parts git writes on every commit and
 * that never name a program: objects, refs, logs, the index and the *_HEAD files. Everything else in
 * it (`config`, `hooks/`, `info/`, `modules/`, `worktrees/`, `commondir`, a new file) is held.
 */
const GIT_DATA = new Set([
  "objects",
  "refs",
  "logs",
  "index",
  "head",
  "orig_head",
  "fetch_head",
  "merge_head",
  "cherry_pick_head",
  "revert_head",
  "commit_editmsg",
  "merge_msg",
  "packed-refs",
]);

/** The repository folder `rel` is in (a `.git` component or a bare layout), or undefined. */
function repositoryOf(rel: string, bareRoots: readonly string[]): string | undefined {
  const parts = rel.split("/");
  const i = parts.findIndex((p) => p.toLowerCase() === ".git");
  if (i >= 0 && i < parts.length - 1) return parts.slice(0, i + 1).join("/");
  return bareRoots.filter((r) => r !== rel && beneath(r, rel)).sort((a, b) => b.length - a.length)[0];
}

function isGitData(repo: string, rel: string): boolean {
  const inner = (repo ? rel.slice(repo.length + 1) : rel).split("/")[0]?.toLowerCase() ?? "";
  return GIT_DATA.has(inner);
}

/**
 * What is new or changed in `after` and is not plain data, sorted by path (folders before their
 * contents). Deleted entries are not listed: removing a file grants nothing.
 */
export function heldChanges(
  before: DeskSnapshot,
  after: DeskSnapshot,
  allowed: ReadonlySet<string> = new Set(),
): HeldEntry[] {
  const bareAfter = repositoryRoots(after.entries.values());
  const bareBefore = new Set(repositoryRoots(before.entries.values()));
  const out: HeldEntry[] = [];
  for (const [rel, e] of after.entries) {
    const was = before.entries.get(rel);
    if (was?.sig === e.sig) continue;
    if (e.kind === "dir" && was?.kind === "dir") continue; // a folder's mode alone grants nothing
    let category = holdReason(e, allowed);
    const repo = repositoryOf(rel, bareAfter);
    if (!category && repo !== undefined && bareAfter.includes(repo) && !allowed.has("vcs")) category = "vcs";
    if (!category) continue;
    // `git commit` in a repository the owner already has writes objects and refs: not a question.
    const repoBefore =
      repo !== undefined && (before.entries.get(repo)?.kind === "dir" || bareBefore.has(repo));
    if (repoBefore && repo !== undefined && e.kind !== "link" && isGitData(repo, rel)) continue;
    out.push({ ...e, category });
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}
