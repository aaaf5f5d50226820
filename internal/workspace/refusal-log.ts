/**
 * One log line per refused symlink (per path and target), not one per turn: a planted link is read on
 * every turn, and the owner needs to see it once, named, not a flood. The daemon installs its logger
 * at start ({@link setRefusalLogger}); before that (tests, the CLI) refusals are only remembered.
 *
 * Process-wide on purpose: every reader of the workspace (prompt files, memory, skills, agents, the
 * inbox) reports through here, and a link seen by two of them is still one line.
 */
import type { Logger } from "../log/logger.js";
import { isWorkspaceError } from "./workspace-error.js";

let sink: Pick<Logger, "warn"> | undefined;
const seen = new Set<string>();

/** Where refusals are logged from now on. */
export function setRefusalLogger(logger: Pick<Logger, "warn"> | undefined): void {
  sink = logger;
}

/**
 * Logs a refusal the door made (once per symlink path and target; other refusals once per path and
 * code). `what` says which reader met it (`prompt file`, `memory index`, `inbox`). Other errors are
 * ignored (the caller handles them). Returns true when `err` was a door refusal.
 */
export function reportRefusal(err: unknown, what: string): boolean {
  if (!isWorkspaceError(err)) return false;
  if (err.code === "FILE_NOT_FOUND") return true;
  const key = err.link ? `link:${err.link.path}\0${err.link.target}` : `${err.code}:${err.message}`;
  if (seen.has(key)) return true;
  seen.add(key);
  sink?.warn(
    { ...(err.link ? { link: err.link.path, target: err.link.target } : {}), code: err.code, reader: what },
    `workspace: refused (${what}): ${err.message}`,
  );
  return true;
}
