/**
 * Writes the workspace marker (gateway/owner-files.ts) at the daemon's start. The marker only ever
 * makes the CLI refuse more, so a failure to write it is logged and the start goes on: the owner's
 * remembered-workspaces list (gateway/daemon-registry.ts) protects the workspace as well.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../log/logger.js";
import { WORKSPACE_MARKER, WORKSPACE_MARKER_TEXT } from "./owner-files.js";

/** Writes `<workspace>/.familiar-workspace` (0644: a note, no secret). */
export function markWorkspace(workspace: string, logger: Pick<Logger, "warn">): void {
  try {
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, WORKSPACE_MARKER), WORKSPACE_MARKER_TEXT, { mode: 0o644 });
  } catch (err) {
    logger.warn(
      { err, workspace },
      `could not write the workspace marker ${join(workspace, WORKSPACE_MARKER)}; the CLI still knows the workspace from the registry`,
    );
  }
}
