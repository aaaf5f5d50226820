/**
 * `familiar memory tainted [list|purge [ids...]]`: memory entries written by conversations that had
 * read untrusted text (containment tags them). `purge` removes them from their memory files and
 * marks them purged; it opens the database read-write, which is safe while the daemon runs (WAL).
 */
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { MemoryTaint, type TaintedMemory } from "../tools/taint/memory-taint.js";

function line(e: TaintedMemory): string {
  const src = e.sources[e.sources.length - 1];
  return `#${e.id}  ${e.path}  ${new Date(e.createdAt).toISOString()}${e.purgedAt ? "  (purged)" : ""}\n    ${e.text.split("\n")[0]}\n    tainted by ${src ? `${src.kind}: ${src.detail}` : "?"}${e.sources.length > 1 ? ` (+${e.sources.length - 1})` : ""}, session ${e.sessionId}\n`;
}

export async function memoryTaintedCommand(
  action: string,
  ids: readonly string[],
  opts: { config: string; all?: boolean; json?: boolean },
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  if (action !== "list" && action !== "purge") {
    err.write(`familiar memory tainted: unknown action "${action}" (list, purge)\n`);
    return 1;
  }
  const nums = ids.map((i) => Number(i.replace(/^#/, "")));
  if (nums.some((n) => !Number.isInteger(n) || n <= 0)) {
    err.write(
      `familiar memory tainted purge: expected entry numbers such as 3 or #3, got ${ids.join(" ")}\n`,
    );
    return 1;
  }
  const { config } = loadConfigFile(opts.config);
  const file = join(config.data_dir, "familiar.db");
  if (!existsSync(file)) {
    out.write(opts.json ? "[]\n" : "no tainted memory entries\n");
    return 0;
  }
  const db = new Database(file, { readonly: action === "list", fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    let store: MemoryTaint;
    try {
      store = new MemoryTaint(db, () => Date.now());
    } catch {
      out.write(opts.json ? "[]\n" : "no tainted memory entries\n");
      return 0;
    }
    if (action === "list") {
      const list = store.list(opts.all);
      if (opts.json) out.write(JSON.stringify(list, null, 2) + "\n");
      else if (list.length === 0) out.write("no tainted memory entries\n");
      else for (const e of list) out.write(line(e));
      return 0;
    }
    const done = await store.purge(config.workspace, nums.length ? nums : undefined);
    if (opts.json) out.write(JSON.stringify(done, null, 2) + "\n");
    else if (done.length === 0) out.write("nothing to purge\n");
    else
      for (const d of done)
        out.write(
          `purged #${d.entry.id} from ${d.entry.path}${d.removed ? "" : " (no longer in the file)"}\n`,
        );
    return 0;
  } finally {
    db.close();
  }
}
