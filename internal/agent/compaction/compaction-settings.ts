/**
 * Effective compaction settings of a session: the session row's own columns (set at create time or by
 * `/compact` options) win, then `agents.<id>.compact`, then `agents.defaults.compact`. Invalid values
 * stored in a row (hand-edited database, older versions) are ignored rather than trusted.
 */
import type { Config } from "../../config/schema.js";

export type CompactStrategy = "auto" | "manual" | "off";

export interface CompactionSettings {
  /** auto: compact before model calls when over the threshold; manual: only on demand; off: never. */
  strategy: CompactStrategy;
  /** Most recent messages kept verbatim (0-200). */
  keepLastN: number;
  /** true: the summariser drops greetings, acks, raw tool output and error traces. */
  observationMask: boolean;
  /** `<provider>/<model>` for summaries; undefined = the session's model. */
  summaryModel: string | undefined;
  /** Fraction of the context window that triggers auto-compaction. */
  threshold: number;
  /** Tokens kept free for the reply. */
  reserveTokens: number;
  /** Run the silent memory-flush turn before auto-compaction. */
  memoryFlush: boolean;
}

/** The session columns that carry per-session overrides (null = not set). */
export interface SessionCompactionColumns {
  compact_strategy: string | null;
  compact_keep_last_n: number | null;
  compact_observation_mask: number | null;
  compact_summary_model: string | null;
}

type CompactConfig = Config["agents"]["defaults"]["compact"];
const STRATEGIES: readonly string[] = ["auto", "manual", "off"];
const MODEL_REF = /^[^/\s]+\/\S+$/;

/** Resolves the settings for `agentId`, optionally with a session row's overrides. */
export function resolveCompactionSettings(
  config: Config,
  agentId: string,
  session?: SessionCompactionColumns,
): CompactionSettings {
  const d = config.agents.defaults;
  // `compaction.model` is another name for `compact.summary_model` (the schema refuses a conflict).
  const defaults: CompactConfig = {
    ...d.compact,
    summary_model: d.compact.summary_model ?? d.compaction.model,
  };
  const agentRaw = (config.agents as Record<string, unknown>)[agentId];
  const agent: Partial<CompactConfig> =
    agentRaw && typeof agentRaw === "object" && agentId !== "defaults"
      ? ((agentRaw as { compact?: Partial<CompactConfig> }).compact ?? {})
      : {};
  const base: CompactConfig = { ...defaults, ...stripUndefined(agent) };
  const s = session;
  const strategy =
    s?.compact_strategy && STRATEGIES.includes(s.compact_strategy)
      ? (s.compact_strategy as CompactStrategy)
      : base.strategy;
  const keepLastN =
    s?.compact_keep_last_n !== null &&
    s?.compact_keep_last_n !== undefined &&
    Number.isInteger(s.compact_keep_last_n) &&
    s.compact_keep_last_n >= 0 &&
    s.compact_keep_last_n <= 200
      ? s.compact_keep_last_n
      : base.keep_last_n;
  const observationMask =
    s?.compact_observation_mask === 0 || s?.compact_observation_mask === 1
      ? s.compact_observation_mask === 1
      : base.observation_mask;
  const summaryModel =
    s?.compact_summary_model && MODEL_REF.test(s.compact_summary_model)
      ? s.compact_summary_model
      : base.summary_model;
  return {
    strategy,
    keepLastN,
    observationMask,
    summaryModel,
    threshold: base.threshold,
    reserveTokens: base.reserve_tokens,
    memoryFlush: base.memory_flush,
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
