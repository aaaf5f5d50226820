/**
 * What labels mean for whoever reads (docs/security.md, "Labels follow the data"): the taint a
 * prompt, an inbound message or a tool's reads carry, found by identity in `data_labels` and the
 * session taint store, and what a clean session's command must not see.
 */
import type { Db } from "../../store/db.js";
import { describeTaint, type TaintInput } from "../../core/taint.js";
import { zoneOf } from "../../workspace/zones.js";
import type { ToolResult } from "../tool.js";
import type { DataLabel, DataLabels } from "./data-labels.js";
import type { TaintStore } from "./taint-store.js";

/** Stored things an inbound message comes from (InboundMessage.reads). */
export interface MessageReads {
  jobs?: string[];
  sessionKeys?: string[];
}

export class LabelReader {
  private sessionOfMessage;
  /** What {@link prompt} derived, and from which list (the labels' cache keeps it by identity). */
  private promptOf: { from: readonly DataLabel[]; inputs: readonly TaintInput[] } | undefined;

  constructor(
    db: Db,
    private labels: DataLabels,
    private taint: TaintStore,
  ) {
    this.sessionOfMessage = db.prepare<[number], { session_id: string }>(
      "SELECT session_id FROM messages WHERE id = ?",
    );
  }

  /**
   * Labelled files of the mind that reach prompts (every file of it but daily notes and the inbox:
   * prompt files, MEMORY.md, HEARTBEAT.md, skills and agent files): each taints every turn until
   * the owner clears it. Checked at admission, so a heartbeat or cron run is tainted from its first
   * step.
   */
  prompt(): readonly TaintInput[] {
    // Every turn asks; the labels rarely change, so the answer is kept for the same list object.
    const files = this.labels.list("file");
    if (this.promptOf?.from !== files) {
      const inputs = files
        .filter((l) => zoneOf(l.key) === "mind" && !/^(memory|inbox)(\/|$)/i.test(l.key))
        .map((l) => ({
          kind: /^memory\.md$/i.test(l.key) ? ("tainted_memory" as const) : ("tainted_data" as const),
          detail: `${l.key} (written by session ${l.sessionId})`,
        }));
      this.promptOf = { from: files, inputs };
    }
    return this.promptOf.inputs;
  }

  /** Labels on what a message comes from: a cron job, a subagent's session. */
  message(reads: MessageReads | undefined): TaintInput[] {
    const out: TaintInput[] = [];
    for (const job of reads?.jobs ?? [])
      for (const l of this.labels.on("job", job))
        out.push({ kind: "tainted_data", detail: `cron job ${job} (written by session ${l.sessionId})` });
    for (const key of reads?.sessionKeys ?? []) {
      const head = this.taint.headOf(key);
      const src = head ? this.taint.sources(head)[0] : undefined;
      if (src) out.push({ kind: "tainted_subagent", detail: `${key}: ${describeTaint(src)}` });
    }
    return out;
  }

  /** Labels on what a tool read (files by path, transcripts by message). */
  read(reads: ToolResult["reads"]): TaintInput[] {
    const out: TaintInput[] = [];
    for (const f of reads?.files ?? [])
      for (const l of this.labels.on("file", f))
        out.push({
          kind: /^(memory\.md|memory\/)/i.test(l.key) ? "tainted_memory" : "tainted_data",
          detail: `${l.key} (written by session ${l.sessionId})`,
        });
    const sessions = new Set<string>();
    for (const id of reads?.messageIds ?? []) {
      const s = this.sessionOfMessage.get(id)?.session_id;
      if (s) sessions.add(s);
    }
    for (const s of sessions) {
      const src = this.taint.sources(s)[0];
      if (src)
        out.push({
          kind: "tainted_memory",
          detail: `the transcript of a tainted session: ${describeTaint(src)}`,
        });
    }
    return out;
  }

  /**
   * What a clean session's command must not see: the inbox (files strangers sent) and every
   * labelled file. Reading them needs `read_file`, which taints.
   */
  masksForClean(): string[] {
    return ["inbox", ...new Set(this.labels.list("file").map((l) => l.key))];
  }
}
