/**
 * The desk fails closed (docs/security.md): around each sandboxed command and each CLI engine turn
 * the desk is snapshotted; afterwards whatever is new or changed and is not plain data
 * (workspace/desk-rules.ts) is held in quarantine and the owner is asked ONE question naming every
 * held entry, its size and the first lines of each file. Yes puts back exactly the bytes shown; no
 * deletes them; no answer (expired, or no channel to ask on) leaves them held in the data dir.
 * A command that wrote only plain data asks nothing.
 */
import { join } from "node:path";
import type { Config } from "../config/schema.js";
import { CATEGORY_WHY, DECEPTIVE, type HoldCategory } from "../workspace/desk-rules.js";
import { heldChanges, MAX_ENTRIES, snapshotDesk, type DeskSnapshot } from "./sandbox/desk-scan.js";
import {
  drop,
  heldBytes,
  hold,
  moveDeskAside,
  release,
  type Held,
  type HeldRecord,
} from "./sandbox/quarantine.js";
import { ToolError, type ToolContext } from "./tool.js";

/** A desk being watched across one command. */
export interface DeskWatch {
  desk: string;
  allowed: ReadonlySet<string>;
  before: DeskSnapshot;
  /** Entries compared at most (MAX_ENTRIES; smaller in tests). */
  max: number;
}

/** `tools.exec.sandbox.desk_allow` as a lower-case set. */
export function deskAllowed(cfg: Config): ReadonlySet<string> {
  return new Set(cfg.tools.exec.sandbox.desk_allow.map((a) => a.toLowerCase()));
}

/**
 * Snapshots the desk before a command. Throws `DESK_TOO_LARGE` when the desk cannot be compared
 * whole: a command is not run where what it leaves could not be checked.
 */
export function watchDesk(desk: string, allowed: ReadonlySet<string>, max = MAX_ENTRIES): DeskWatch {
  const before = snapshotDesk(desk, allowed, max);
  if (!before.complete)
    throw new ToolError(
      "DESK_TOO_LARGE",
      `refused: the desk holds more than ${max.toLocaleString("en-US")} entries, too many to check after a command; ` +
        "delete files from it, or allow a dependency folder by name (tools.exec.sandbox.desk_allow)",
    );
  return { desk, allowed, before, max };
}

/** What became of the held entries, for the tool result (the model sees it). */
export interface DeskOutcome {
  note: string;
  kept: boolean;
}

/** Control characters and bidirectional marks, made visible: a held name must not drive a screen. */
function visible(s: string, newlines = false): string {
  let out = "";
  for (const c of s) {
    const keep = c === "\t" || (c === "\n" && !newlines) || !DECEPTIVE.test(c);
    out += keep ? c : `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`;
  }
  return out;
}

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Files listed one per line in the question; beyond this the rest is counted per folder. */
const LISTED = 60;
/** Files whose first lines are shown, and how much of each. */
const PREVIEWS = 6;
const PREVIEW_LINES = 12;
const PREVIEW_CHARS = 800;

function describe(rec: HeldRecord): string {
  const name = visible(rec.rel, true);
  if (rec.kind === "link") return `${name} -> ${visible(rec.target ?? "?", true)} (link)`;
  if (rec.kind === "dir") return `${name}/ (folder)`;
  if (rec.kind === "other") return `${name} (fifo, socket or device)`;
  const exec = rec.mode & 0o111 ? ", executable" : "";
  return `${name} (${size(rec.size)}${exec})`;
}

function preview(h: Held, rec: HeldRecord): string | undefined {
  const bytes = heldBytes(h, rec);
  if (!bytes || bytes.subarray(0, 4096).includes(0)) return undefined;
  const lines = bytes
    .subarray(0, PREVIEW_CHARS * 2)
    .toString("utf8")
    .split("\n")
    .slice(0, PREVIEW_LINES);
  const text = lines
    .map((l) => visible(l))
    .join("\n")
    .slice(0, PREVIEW_CHARS)
    .trimEnd();
  return `--- ${visible(rec.rel, true)}\n${text}`;
}

/** The question: every held entry by category (the first {@link LISTED} files by name), previews. */
export function heldQuestion(h: Held): string {
  const byCat = new Map<string, HeldRecord[]>();
  for (const r of h.records)
    if (r.kind !== "dir") byCat.set(r.category, [...(byCat.get(r.category) ?? []), r]);
  const files = h.records.filter((r) => r.kind !== "dir");
  const total = files.reduce((s, r) => s + r.size, 0);
  const lines = [
    `The command left ${files.length} file${files.length === 1 ? "" : "s"} (${size(total)}) on the desk that other programs would run or obey. ` +
      "They are held, not on the desk. Approve puts back exactly these bytes; deny deletes them.",
  ];
  let listed = 0;
  for (const [cat, recs] of byCat) {
    lines.push(`${cat}: ${CATEGORY_WHY[cat as HoldCategory] ?? cat}`);
    for (const r of recs) {
      if (listed++ < LISTED) lines.push(`  ${describe(r)}`);
    }
  }
  if (listed > LISTED)
    lines.push(`  … and ${listed - LISTED} more, every one listed in ${join(h.dir, "manifest.json")}`);
  lines.push(`Full content: ${join(h.dir, "files")}`);
  const shown = files
    .filter((r) => r.kind === "file" && !r.rel.endsWith(".sample"))
    .map((r) => preview(h, r))
    .filter((p): p is string => p !== undefined)
    .slice(0, PREVIEWS);
  return [...lines, ...shown].join("\n");
}

/** Entries that could not be held, in words. */
function failedNote(failed: readonly string[]): string {
  return failed.length
    ? ` (${failed.length} could not be held: ${failed
        .slice(0, 5)
        .map((f) => visible(f, true))
        .join(", ")})`
    : "";
}

/** What a command changed on the desk (desk-relative files and links), for the taint labels. */
function changedFiles(before: DeskSnapshot, after: DeskSnapshot): string[] {
  const out: string[] = [];
  for (const [rel, e] of after.entries)
    if (e.kind !== "dir" && before.entries.get(rel)?.sig !== e.sig) out.push(rel);
  return out;
}

/**
 * After the command: holds what is not plain data and asks the owner. `outcome` is undefined when the
 * command left only plain data (the usual case: no question, no note); `changed` lists every file it
 * wrote on the desk (desk-relative), held or not.
 */
export async function settleDesk(
  w: DeskWatch,
  dataDir: string,
  ctx: ToolContext,
): Promise<{ outcome: DeskOutcome | undefined; changed: string[] }> {
  const after = snapshotDesk(w.desk, w.allowed, w.max);
  const changed = changedFiles(w.before, after);
  if (!after.complete) return { outcome: overflow(w, dataDir, ctx), changed };
  return { outcome: await holdAndAsk(w, after, dataDir, ctx), changed };
}

/**
 * A command that left more entries than can be compared could hide anything among them: the whole
 * desk is moved out of reach (into the quarantine, or beside it when the data dir is on another
 * file system) and a fresh one made. Fail closed: nothing on an unchecked desk stays where programs
 * look.
 */
function overflow(w: DeskWatch, dataDir: string, ctx: ToolContext): DeskOutcome {
  const to = moveDeskAside(w.desk, join(dataDir, "quarantine"));
  ctx.logger.warn({ movedTo: to }, "desk: grew past what can be checked; moved aside whole");
  return {
    note: `\n[the desk grew past ${w.max.toLocaleString("en-US")} entries, too many to check: all of it was moved to ${to} and a new, empty desk made]`,
    kept: false,
  };
}

async function holdAndAsk(
  w: DeskWatch,
  after: DeskSnapshot,
  dataDir: string,
  ctx: ToolContext,
): Promise<DeskOutcome | undefined> {
  const changed = heldChanges(w.before, after, w.allowed);
  if (changed.length === 0) return undefined;
  const h = hold(w.desk, changed, join(dataDir, "quarantine"));
  const count = h.records.filter((r) => r.kind !== "dir").length;
  ctx.logger.warn(
    { held: h.records.map((r) => r.rel), failed: h.failed, quarantine: h.dir },
    "desk: held what a command left that is not plain data",
  );
  const what = `${count} file${count === 1 ? "" : "s"} (${[...new Set(h.records.map((r) => r.category))].join(", ")})`;
  if (h.records.length === 0)
    return { note: `\n[could not hold what the command left${failedNote(h.failed)}]`, kept: false };
  if (!(ctx.approvalTarget ?? ctx.replyTarget))
    return {
      note: `\n[the command left ${what} that are not plain data; held in the data dir: no channel to ask the owner on${failedNote(h.failed)}]`,
      kept: false,
    };
  const decision = await ctx.requestApproval({ kind: "planted", summary: heldQuestion(h) });
  if (decision === "approved") {
    const r = release(w.desk, h);
    const failed = r.failed.length ? ` (not restored, still held: ${r.failed.slice(0, 5).join(", ")})` : "";
    return { note: `\n[the owner kept ${what}${failed}]`, kept: true };
  }
  if (decision === "denied") {
    drop(h);
    return { note: `\n[the owner declined: ${what} deleted]`, kept: false };
  }
  return {
    note: `\n[the owner did not answer: ${what} held in the data dir, not on the desk]`,
    kept: false,
  };
}
