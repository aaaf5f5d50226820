/**
 * The one error the workspace door throws. Its message is written for the model (a tool returns it
 * as a clear tool error) and for the owner's log; `link` names a symlink that was refused, so the
 * caller (or {@link reportRefusal}) can log it once.
 */

/** Why the door refused or failed. */
export type WorkspaceErrorCode =
  | "PATH_INVALID"
  | "PATH_OUTSIDE_WORKSPACE"
  | "PATH_SYMLINK_REFUSED"
  | "PATH_SYMLINK_LOOP"
  | "PATH_SYMLINK_SWAPPED"
  | "FILE_NOT_FOUND"
  | "FILE_IS_DIR"
  | "FILE_NOT_REGULAR"
  | "FILE_TOO_LARGE"
  | "FILE_HARDLINKED"
  | "NOT_A_DIR";

/** A symlink met on the way: where it is (workspace-relative) and what it points at. */
export interface RefusedLink {
  path: string;
  target: string;
}

export class WorkspaceError extends Error {
  constructor(
    readonly code: WorkspaceErrorCode,
    message: string,
    /** Set when a symlink was refused. */
    readonly link?: RefusedLink,
  ) {
    super(message);
    this.name = "WorkspaceError";
  }
}

/** True when `err` is a {@link WorkspaceError} (of one of `codes`, when given). */
export function isWorkspaceError(err: unknown, ...codes: WorkspaceErrorCode[]): err is WorkspaceError {
  return err instanceof WorkspaceError && (codes.length === 0 || codes.includes(err.code));
}
