/**
 * Whether a skill's required binary is installed: looks on PATH (the owner's machine, never the
 * workspace), so this is the one file of `internal/skills/` that uses `node:fs` directly.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** True when `bin` (a name on `pathVar`, or a path) is an executable file. */
export function onPath(bin: string, pathVar: string): boolean {
  if (bin.includes("/")) {
    try {
      accessSync(bin, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  for (const d of pathVar.split(delimiter)) {
    if (!d) continue;
    try {
      accessSync(join(d, bin), constants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
}
