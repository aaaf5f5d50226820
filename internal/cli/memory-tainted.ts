/**
 * `familiar memory tainted [list|purge [ids...]|clear <path|job:id>...]`: what conversations that had
 * read untrusted text wrote. Entries (`memory_write`) are listed with their text; every file or job
 * such a conversation wrote carries a label (stored by identity, so an edit does not drop it), and a
 * labelled file taints whoever reads it. `purge` removes entries from their memory files and clears a
 * file's label once none of its tainted entries is left in it; an entry whose text was edited since
 * cannot be found, and purge says so (the label stays). `clear` is the owner vouching for a file or
 * job as it is now. Both open the database read-write, which is safe while the daemon runs (WAL).
 */
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { MemoryTaint, type TaintedMemory } from "../tools/taint/memory-taint.js";
import { DataLabels, type DataLabel } from "../tools/taint/data-labels.js";

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
  if (action !== "list" && action !== "purge" && action !== "clear") {
    err.write(`familiar memory tainted: unknown action "${action}" (list, purge, clear)\n`);
    return 1;
  }
  if (action === "clear" && ids.length === 0) {
    err.write(
      "familiar memory tainted clear: name what you vouch for: a workspace path (MEMORY.md) or job:<id>\n",
    );
    return 1;
  }
  const nums = action === "clear" ? [] : ids.map((i) => Number(i.replace(/^#/, "")));
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
    let labels: DataLabels;
    try {
      store = new MemoryTaint(db, () => Date.now());
      labels = new DataLabels(db, () => Date.now());
    } catch {
      out.write(opts.json ? "[]\n" : "no tainted memory entries\n");
      return 0;
    }
    if (action === "list") {
      const list = store.list(opts.all);
      const labelled = [...labels.list("file"), ...labels.list("job")];
      if (opts.json) out.write(JSON.stringify({ entries: list, labels: labelled }, null, 2) + "\n");
      else if (list.length === 0 && labelled.length === 0) out.write("no tainted memory entries\n");
      else {
        for (const e of list) out.write(line(e));
        if (labelled.length) out.write("\nlabelled (whoever reads them is tainted):\n");
        for (const l of labelled) out.write(labelLine(l));
      }
      return 0;
    }
    if (action === "clear") {
      let code = 0;
      for (const id of ids) {
        const [kind, key] = id.startsWith("job:") ? (["job", id.slice(4)] as const) : (["file", id] as const);
        const n = labels.clear(kind, key);
        if (n === 0) {
          err.write(
            `familiar memory tainted clear: no label on ${id} (familiar memory tainted lists them)\n`,
          );
          code = 1;
        } else out.write(`cleared ${n} label(s) on ${id}: you vouch for it as it is now\n`);
      }
      return code;
    }
    const done = await store.purge(config.workspace, nums.length ? nums : undefined, labels);
    const code = done.every((d) => d.removed) ? 0 : 1;
    if (opts.json) out.write(JSON.stringify(done, null, 2) + "\n");
    else if (done.length === 0) out.write("nothing to purge\n");
    else
      for (const d of done)
        out.write(
          d.removed
            ? `purged #${d.entry.id} from ${d.entry.path}\n`
            : `could NOT remove #${d.entry.id} from ${d.entry.path}: its text is no longer there as written (edited or moved?); ` +
                `${d.entry.path} stays labelled and taints whoever reads it. Remove the text yourself, then: familiar memory tainted clear ${d.entry.path}\n`,
        );
    return code;
  } finally {
    db.close();
  }
}

function labelLine(l: DataLabel): string {
  const src = l.sources[l.sources.length - 1];
  const what = l.kind === "job" ? `job:${l.key}` : l.key;
  return `  ${what}  ${new Date(l.createdAt).toISOString()}  written by session ${l.sessionId}${src ? ` (${src.kind}: ${src.detail})` : ""}\n`;
}
