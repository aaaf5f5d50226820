/**
 * The move to the desk layout at start (issue 43; docs/security.md, "Zones"): the desk is made (or a
 * non-folder at its name moved aside), and an install from before the desk is told once, in the log,
 * where its files are now: nothing is moved or deleted. The owner's files outside the desk and the
 * mind stay where they were, readable by the model and read-only to commands.
 */
import { existsSync, readdirSync } from "node:fs";
import type { Logger } from "../log/logger.js";
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";
import { DESK, ensureDesk, zoneOf } from "../workspace/zones.js";

const LOGGED = "desk-layout";

/** Makes the desk and logs the layout once per data dir. Nothing happens without a workspace yet. */
export function settleDeskLayout(workspace: string, db: Db, logger: Logger): void {
  if (!existsSync(workspace)) return;
  const setup = ensureDesk(workspace);
  if (setup.movedAside)
    logger.warn(
      { desk: setup.desk, movedAside: setup.movedAside },
      "workspace: something that was not a folder stood at desk/ (a link or a file); it was moved aside and a new desk made",
    );
  const kv = new KvNamespace(db, "layout:");
  if (kv.get(LOGGED)) return;
  const others = readdirSync(workspace).filter((n) => n !== DESK && zoneOf(n) === "other");
  logger.info(
    { desk: setup.desk, ownerFiles: others.slice(0, 20), ownerFileCount: others.length },
    others.length
      ? `workspace layout: commands now run in and write only desk/; ${others.length} file(s) or folder(s) of yours outside it stay where they are, read-only to commands (familiar doctor explains the layout)`
      : "workspace layout: commands now run in and write only desk/ (familiar doctor explains the layout)",
  );
  kv.set(LOGGED, "1");
}
