/**
 * Tool-loop detection (REQ-410, REQ-411): four detectors over the tool calls of one turn chain.
 * Pure, synchronous, allocation-light; one instance per turn chain (create it when a turn starts).
 *
 * Protocol for the agent loop, per tool call:
 *   const check = detector.beforeCall({ name, args });
 *   - "ok":       run the tool.
 *   - "warning":  run the tool, append `check.message` to the result the model sees.
 *   - "critical": do NOT run the tool; give the model an error result with `check.message`.
 *   - "breaker":  do NOT run the tool; end the turn; `check.message` is the reason to tell the user.
 *   detector.afterCall({ name, args }, rawResultText)   // only for calls that actually ran
 * Log every finding (detector, count, tool).
 *
 * Counting rules (the invariants the tests pin down):
 * - Every attempt is recorded, including blocked ones, so a model that ignores a block keeps counting
 *   up towards the circuit breaker instead of being blocked forever.
 * - Every count includes the call being checked: the 10th identical call is the one that warns.
 * - generic_repeat, known_poll and ping_pong look at a window of the last `history_size` calls,
 *   the current one included, so their counts never exceed `history_size`; a threshold above
 *   `history_size` can never fire (reported in `configWarnings`).
 * - The circuit breaker looks at the last max(history_size, limit) calls, the current one included, so
 *   it can always count to `limit`: with the defaults (30/30), 30 identical calls in a row end the turn.
 * - generic_repeat skips `poll_tools`: polling the same thing is legitimate while its result changes;
 *   known_poll judges those by progress instead. The breaker applies to every tool.
 * - known_poll counts the trailing run of identical results of the same call (other calls in between
 *   are ignored; a different result ends the run). Calls still running or blocked count as no progress.
 * - ping_pong counts the trailing strictly alternating run of exactly two calls whose results did not
 *   change; it needs at least 4 calls (two full round trips) whatever the thresholds.
 */
import type { Config } from "../../config/schema.js";
import { callHash, resultHash } from "./call-hash.js";
import { pollBackoff } from "./poll-backoff.js";

export type LoopDetectionConfig = Config["agents"]["defaults"]["loop_detection"];

export type LoopDetectorKind = "generic_repeat" | "known_poll" | "ping_pong" | "circuit_breaker";
export type LoopVerdict = "ok" | "warning" | "critical" | "breaker";

/** One detector's finding; log all three fields. */
export interface LoopFinding {
  detector: LoopDetectorKind;
  level: Exclude<LoopVerdict, "ok">;
  /** The detector's count, the current call included. */
  count: number;
  tool: string;
  message: string;
}

export interface LoopCheck {
  verdict: LoopVerdict;
  findings: LoopFinding[];
  /**
   * What to show: warning -> append to the tool result; critical -> the error result given to the
   * model instead of running the tool; breaker -> the reason given to the user. Empty for "ok".
   */
  message: string;
  /** For poll tools without progress: a suggested delay before the next poll, in ms (0 = none). */
  backoffMs: number;
}

export interface ToolCallInput {
  name: string;
  /** Parsed arguments or the model's raw JSON string. */
  args: unknown;
}

export interface LoopDetector {
  beforeCall(call: ToolCallInput): LoopCheck;
  /** Records the raw result (before any warning text was appended) of a call that ran. */
  afterCall(call: ToolCallInput, resultText: string): void;
  /** Forgets everything (a new turn chain). */
  reset(): void;
  /** Settings that make a detector unreachable, for a startup log line. */
  readonly configWarnings: readonly string[];
}

interface CallRecord {
  hash: string;
  tool: string;
  /** Result hash once the call ran. */
  result?: string;
  /** Not run: blocked by critical/breaker. */
  blocked: boolean;
}

const RANK: Record<LoopVerdict, number> = { ok: 0, warning: 1, critical: 2, breaker: 3 };
const OK: LoopCheck = Object.freeze({ verdict: "ok", findings: [], message: "", backoffMs: 0 }) as LoopCheck;
const PING_PONG_MIN = 4;

function level(count: number, warning: number, critical: number): "warning" | "critical" | undefined {
  if (count >= critical) return "critical";
  if (count >= warning) return "warning";
  return undefined;
}

/** Creates a detector for one turn chain. */
export function createLoopDetector(cfg: LoopDetectionConfig): LoopDetector {
  const historySize = cfg.history_size;
  const breakerLimit = cfg.circuit_breaker.enabled ? cfg.circuit_breaker.limit : 0;
  const capacity = Math.max(historySize, breakerLimit);
  const pollTools = new Set(cfg.poll_tools);
  let records: CallRecord[] = [];

  const configWarnings: string[] = [];
  for (const [name, d] of [
    ["generic_repeat", cfg.generic_repeat],
    ["known_poll", cfg.known_poll],
    ["ping_pong", cfg.ping_pong],
  ] as const) {
    if (!d.enabled) continue;
    if (d.warning > historySize)
      configWarnings.push(
        `loop_detection.${name}.warning (${d.warning}) exceeds history_size (${historySize}) and can never fire`,
      );
    else if (d.critical > historySize)
      configWarnings.push(
        `loop_detection.${name}.critical (${d.critical}) exceeds history_size (${historySize}) and can never fire`,
      );
    if (d.critical <= d.warning)
      configWarnings.push(
        `loop_detection.${name}.critical (${d.critical}) is not above warning (${d.warning}); calls are blocked without a warning first`,
      );
  }

  /** Same call, identical result run, walking back from the newest record within `prev`. */
  function noProgressRun(prev: readonly CallRecord[], hash: string): number {
    let ref: string | undefined;
    let n = 0;
    for (let i = prev.length - 1; i >= 0; i--) {
      const r = prev[i]!;
      if (r.hash !== hash) continue;
      if (r.blocked || r.result === undefined) {
        n++;
        continue;
      }
      if (ref === undefined) ref = r.result;
      else if (r.result !== ref) break;
      n++;
    }
    return n;
  }

  /** Length of the alternating two-call tail ending in `hash` (current included), or 0. */
  function pingPongRun(prev: readonly CallRecord[], hash: string): { count: number; other?: CallRecord } {
    const last = prev[prev.length - 1];
    if (!last || last.hash === hash) return { count: 0 };
    const refs = new Map<string, string>();
    let n = 0;
    for (let i = prev.length - 1; i >= 0; i--) {
      const r = prev[i]!;
      const expected = n % 2 === 0 ? last.hash : hash;
      if (r.hash !== expected) break;
      if (!r.blocked && r.result !== undefined) {
        const ref = refs.get(r.hash);
        if (ref === undefined) refs.set(r.hash, r.result);
        else if (ref !== r.result) break;
      }
      n++;
    }
    return { count: n + 1, other: last };
  }

  function beforeCall(call: ToolCallInput): LoopCheck {
    if (!cfg.enabled) return OK;
    const hash = callHash(call.name, call.args);
    const tool = call.name;
    const isPoll = pollTools.has(tool);
    const windowPrev = records.length > historySize - 1 ? records.slice(-(historySize - 1)) : records;
    const findings: LoopFinding[] = [];
    let backoffMs = 0;

    if (cfg.generic_repeat.enabled && !isPoll) {
      let count = 1;
      for (const r of windowPrev) if (r.hash === hash) count++;
      const lv = level(count, cfg.generic_repeat.warning, cfg.generic_repeat.critical);
      if (lv)
        findings.push({
          detector: "generic_repeat",
          level: lv,
          count,
          tool,
          message:
            lv === "warning"
              ? `You have called ${tool} with identical arguments ${count} times in this turn. Repeating it will not give a different answer: use the result you already have, change the arguments, or try another approach.`
              : `${tool} was called with identical arguments ${count} times in this turn, so this call was not run. Use the results you already have, change approach, or answer the user.`,
        });
    }

    if (cfg.known_poll.enabled && isPoll) {
      const count = noProgressRun(windowPrev, hash) + 1;
      const lv = level(count, cfg.known_poll.warning, cfg.known_poll.critical);
      if (lv) {
        const backoff = pollBackoff(count);
        backoffMs = backoff.delayMs;
        findings.push({
          detector: "known_poll",
          level: lv,
          count,
          tool,
          message:
            lv === "warning"
              ? `${tool} has returned the same result ${count} times in a row: no progress. ${backoff.text}`
              : `${tool} returned the same result ${count} times in a row, so this poll was not run. Stop polling and tell the user the current state.`,
        });
      }
    }

    if (cfg.ping_pong.enabled) {
      const { count, other } = pingPongRun(windowPrev, hash);
      const lv =
        count >= PING_PONG_MIN ? level(count, cfg.ping_pong.warning, cfg.ping_pong.critical) : undefined;
      if (lv && other) {
        const pair = other.tool === tool ? `two different ${tool} calls` : `${other.tool} and ${tool}`;
        findings.push({
          detector: "ping_pong",
          level: lv,
          count,
          tool,
          message:
            lv === "warning"
              ? `You have been alternating between ${pair} for ${count} calls with no change in their results. Break the cycle: try something different or answer with what you know.`
              : `Alternating between ${pair} for ${count} calls with no change in results, so this call was not run. Stop and answer the user with what you know.`,
        });
      }
    }

    if (breakerLimit > 0) {
      const prev = records.length > capacity - 1 ? records.slice(-(capacity - 1)) : records;
      let count = 1;
      for (const r of prev) if (r.hash === hash) count++;
      if (count >= breakerLimit)
        findings.push({
          detector: "circuit_breaker",
          level: "breaker",
          count,
          tool,
          // A reason, not a sentence to the user: the loop wraps it in its own "I stopped because ..." text.
          message: `${tool} was called with the same arguments ${count} times`,
        });
    }

    let verdict: LoopVerdict = "ok";
    for (const f of findings) if (RANK[f.level] > RANK[verdict]) verdict = f.level;
    records.push({ hash, tool, blocked: verdict === "critical" || verdict === "breaker" });
    if (records.length > capacity) records = records.slice(-capacity);
    if (verdict === "ok") return OK;
    const shown =
      verdict === "breaker"
        ? findings.filter((f) => f.level === "breaker")
        : findings.filter((f) => f.level === verdict);
    return {
      verdict,
      findings,
      // The agent loop frames these ("[loop detection warning] ...", "Blocked by loop detection: ...").
      message: shown.map((f) => f.message).join(" "),
      backoffMs,
    };
  }

  function afterCall(call: ToolCallInput, resultText: string): void {
    if (!cfg.enabled) return;
    const hash = callHash(call.name, call.args);
    // Oldest pending record of this call: parallel identical calls complete in any order but are
    // indistinguishable, so matching oldest-first is as good as any and keeps results in place.
    for (const r of records) {
      if (r.hash === hash && !r.blocked && r.result === undefined) {
        r.result = resultHash(resultText);
        return;
      }
    }
  }

  return {
    beforeCall,
    afterCall,
    reset: () => {
      records = [];
    },
    configWarnings,
  };
}
