/**
 * After a sandboxed command: what it left behind that the owner's own tools would run (a new
 * `.git/config`, hooks, `.envrc`, `.vscode/tasks.json`, `.claude/settings.json`...) is moved to
 * quarantine and the owner is asked ONE question naming it (Invariant 4, docs/security.md).
 * Yes puts it back; no deletes it; no answer (expired, or no channel to ask on) leaves it in
 * quarantine under the data dir, where the owner can still look. Commands that touch no protected
 * path never ask.
 */
import { join } from "node:path";
import { closeSync, fstatSync, readSync } from "node:fs";
import { describePaths, plantedPaths, type OwnerSnapshot } from "./sandbox/planted-files.js";
import { ownerToolFileReason } from "./sandbox/owner-tool-files.js";
import { openStrict } from "./sandbox/pinned-fds.js";
import { drop, quarantine, restore } from "./sandbox/quarantine.js";
import type { ToolContext } from "./tool.js";

/** Control characters other than tab and newline: a planted file must not drive the owner's terminal. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Characters of each file shown to the owner in the question. */
const PREVIEW_CHARS = 300;

/** The first characters of a planted file, control characters made visible. */
function preview(root: string, abs: string): string | undefined {
  const fd = openStrict(root, abs);
  if (fd === undefined) return undefined;
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buf = Buffer.alloc(PREVIEW_CHARS);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString("utf8").replace(CONTROL, "?");
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** What became of the planted paths, for the tool result (the model sees it). */
export interface PlantOutcome {
  note: string;
  kept: boolean;
}

/**
 * Compares `after` with `before` and handles what is new. Returns undefined when nothing was
 * planted (the usual case: no question, no note).
 */
export async function guardPlanted(
  root: string,
  before: OwnerSnapshot,
  after: OwnerSnapshot,
  dataDir: string,
  ctx: ToolContext,
): Promise<PlantOutcome | undefined> {
  const planted = plantedPaths(before, after);
  const partial = !after.complete
    ? "\n[note: the workspace has too many entries to check all of it for planted tool files]"
    : "";
  if (planted.length === 0) return partial ? { note: partial, kept: true } : undefined;
  const q = quarantine(root, planted, join(dataDir, "quarantine"));
  const what = describePaths(q.moved, 20);
  const distinct = [...new Set(q.moved.map((p) => ownerToolFileReason(p)).filter(Boolean))];
  const reasons =
    distinct.length === 1
      ? distinct[0]
      : "each of these makes the owner's own tools (git, direnv, editors, npm, the Claude CLI...) run commands";
  ctx.logger.warn({ planted: q.moved, failed: q.failed, quarantine: q.dir }, "exec left owner-tool files");
  if (q.moved.length === 0)
    return { note: `\n[could not move ${describePaths(q.failed)} to quarantine]${partial}`, kept: false };
  if (!(ctx.approvalTarget ?? ctx.replyTarget))
    return {
      note: `\n[the command created ${what}; moved to quarantine in the data dir: no channel to ask the owner on]${partial}`,
      kept: false,
    };
  const shown = q.moved
    .filter((p) => !p.endsWith(".sample"))
    .slice(0, 3)
    .map((p) => ({ p, text: preview(q.dir, join(q.dir, p)) }))
    .filter((x) => x.text !== undefined)
    .map((x) => `--- ${x.p}\n${x.text ?? ""}`)
    .join("\n");
  const decision = await ctx.requestApproval({
    kind: "planted",
    summary:
      `the command created ${what}: ${reasons}. ` +
      `They are in quarantine now; keep them? Approve puts them back, deny deletes them.` +
      (shown ? `\n${shown}` : ""),
  });
  if (decision === "approved") {
    const r = restore(root, q);
    const failed = r.failed.length ? ` (not restored, still in quarantine: ${describePaths(r.failed)})` : "";
    return { note: `\n[the owner kept ${describePaths(r.restored)}${failed}]${partial}`, kept: true };
  }
  if (decision === "denied") {
    drop(q);
    return { note: `\n[the owner declined: ${what} deleted]${partial}`, kept: false };
  }
  return {
    note: `\n[the owner did not answer: ${what} left in quarantine in the data dir, not in the workspace]${partial}`,
    kept: false,
  };
}
