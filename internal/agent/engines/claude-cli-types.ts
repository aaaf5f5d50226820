/**
 * The shapes of the `claude-cli` engine (claude-cli-engine.ts): its options, and the record it keeps
 * per live CLI subprocess.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import type { Db } from "../../store/db.js";
import type { Logger } from "../../log/logger.js";
import type { Usage } from "../../models/types.js";
import type { Clock, TimerHandle } from "../../core/clock.js";
import type { Launch } from "./engine-launch.js";

/** How the `claude-cli` engine starts and keeps its subprocesses. */
export interface ClaudeCliOptions {
  command: string;
  model?: string;
  extraArgs: string[];
  /** Absolute path of an MCP servers file, passed as `--mcp-config`. */
  mcpConfig?: string;
  /** Fallback for `--append-system-prompt` when a turn carries no system message. */
  systemPrompt?: string;
  idleTtlMs: number;
  partialMessages: boolean;
  cwd: string;
  db: Db;
  logger: Logger;
  normalizeUsage: (raw: unknown) => Usage;
  /** Timer source for the idle reap (the daemon's clock; a FakeClock in tests). */
  clock?: Clock;
  /**
   * How the CLI is started (engine-launch.ts: minimal environment, sandbox). The registry always
   * passes one; without it the CLI inherits the daemon's environment (tests that drive the engine
   * directly).
   */
  launch?: Launch;
}

/** One live `claude -p` subprocess and what the engine knows about it. */
export interface Proc {
  child: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  idleTimer?: TimerHandle;
  busy: boolean;
  dead: boolean;
  stderr: string;
  /** The `--model` it was started with (undefined: the CLI's default). */
  model: string | undefined;
  /** The `--append-system-prompt` it was started with (a subprocess cannot change it). */
  system: string | undefined;
  /** The process's last reported `total_cost_usd`: a running total over its lifetime (stream-json). */
  costSoFar: number;
  /** The CLI session id it was started to resume (undefined: a fresh CLI session). */
  resumed: string | undefined;
  /** Turns written to it so far. */
  turns: number;
  /** It printed its `system/init` line (a failed resume never does). */
  sawInit: boolean;
  /** Resolves when the process has exited and its stdio is closed. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}
