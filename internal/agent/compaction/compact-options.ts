/**
 * `/compact` options: per-session compaction settings given on demand, before the free-text
 * instructions, e.g. `/compact keep=4 mask=off focus on the invoices`.
 *
 * | Option | Values | Session column |
 * | --- | --- | --- |
 * | `keep` / `keep_last_n` | 0-200 | `compact_keep_last_n` |
 * | `mask` / `observation_mask` | on, off, true, false, yes, no | `compact_observation_mask` |
 * | `strategy` | auto, manual, off | `compact_strategy` |
 * | `model` / `summary_model` | `<provider>/<model>`, or `default` to clear | `compact_summary_model` |
 *
 * Invariants: options are only recognised at the start of the text (the first token that is not a
 * known `key=value` starts the instructions); a known key with a bad value is an error naming the key,
 * the expected values and what was given; saved options stay on the session row and are copied to its
 * successors, so they apply to later automatic compactions too.
 */
import type { Db } from "../../store/db.js";
import { CompactionError } from "./lineage.js";

/** Parsed options; `null` clears a column back to the agent/config default. */
export interface CompactOptions {
  keepLastN?: number;
  observationMask?: boolean;
  strategy?: "auto" | "manual" | "off";
  summaryModel?: string | null;
}

const KEYS: Record<string, keyof CompactOptions> = {
  keep: "keepLastN",
  keep_last_n: "keepLastN",
  mask: "observationMask",
  observation_mask: "observationMask",
  strategy: "strategy",
  model: "summaryModel",
  summary_model: "summaryModel",
};

const TRUE = new Set(["on", "true", "yes", "1"]);
const FALSE = new Set(["off", "false", "no", "0"]);

function bad(key: string, expected: string, got: string): CompactionError {
  return new CompactionError("COMPACT_BAD_OPTION", `${key}: expected ${expected}, got "${got}"`);
}

/** Splits `/compact` text into options and the remaining instructions. Throws on a bad value. */
export function parseCompactText(text: string | undefined): {
  options: CompactOptions;
  instructions?: string;
} {
  const options: CompactOptions = {};
  let rest = (text ?? "").trim();
  for (;;) {
    const m = /^([a-z_]+)=(\S+)(?:\s+|$)/i.exec(rest);
    const field = m ? KEYS[m[1]!.toLowerCase()] : undefined;
    if (!m || !field) break;
    const key = m[1]!.toLowerCase();
    const value = m[2]!;
    const v = value.toLowerCase();
    if (field === "keepLastN") {
      const n = Number(value);
      if (!/^\d+$/.test(value) || n > 200) throw bad(key, "an integer from 0 to 200", value);
      options.keepLastN = n;
    } else if (field === "observationMask") {
      if (!TRUE.has(v) && !FALSE.has(v)) throw bad(key, "on or off", value);
      options.observationMask = TRUE.has(v);
    } else if (field === "strategy") {
      if (v !== "auto" && v !== "manual" && v !== "off") throw bad(key, "auto, manual or off", value);
      options.strategy = v;
    } else {
      if (v === "default") options.summaryModel = null;
      else if (/^[^/\s]+\/\S+$/.test(value)) options.summaryModel = value;
      else throw bad(key, "<provider>/<model> or default", value);
    }
    rest = rest.slice(m[0].length);
  }
  rest = rest.trim();
  return rest ? { options, instructions: rest } : { options };
}

/** True when at least one option was given. */
export function hasOptions(o: CompactOptions): boolean {
  return Object.keys(o).length > 0;
}

/** `keep_last_n=4, observation_mask=off` for messages. */
export function describeOptions(o: CompactOptions): string {
  const parts: string[] = [];
  if (o.strategy !== undefined) parts.push(`strategy=${o.strategy}`);
  if (o.keepLastN !== undefined) parts.push(`keep_last_n=${o.keepLastN}`);
  if (o.observationMask !== undefined) parts.push(`observation_mask=${o.observationMask ? "on" : "off"}`);
  if (o.summaryModel !== undefined) parts.push(`summary_model=${o.summaryModel ?? "default"}`);
  return parts.join(", ");
}

/** Stores the options on the session row (only the given columns change). */
export function saveCompactOptions(db: Db, sessionId: string, o: CompactOptions): void {
  const sets: string[] = [];
  const params: Record<string, string | number | null> = { id: sessionId };
  if (o.strategy !== undefined) {
    sets.push("compact_strategy = @strategy");
    params.strategy = o.strategy;
  }
  if (o.keepLastN !== undefined) {
    sets.push("compact_keep_last_n = @keep");
    params.keep = o.keepLastN;
  }
  if (o.observationMask !== undefined) {
    sets.push("compact_observation_mask = @mask");
    params.mask = o.observationMask ? 1 : 0;
  }
  if (o.summaryModel !== undefined) {
    sets.push("compact_summary_model = @model");
    params.model = o.summaryModel;
  }
  if (sets.length === 0) return;
  db.prepare(`UPDATE sessions SET ${sets.join(", ")} WHERE id = @id`).run(params);
}
