/**
 * Edits of config.yaml through the `yaml` package's Document API, so the owner's comments, key order
 * and formatting outside the edited keys survive. Invariants:
 * - only the paths an edit names change; a cron job is matched by `id`, so a second import replaces
 *   its own entry instead of appending a copy;
 * - a collection the import adds to is written in block style (the shipped `providers: {}` is flow);
 * - the result is validated with the real config schema before anything is written (see
 *   import-openclaw.ts), so an import never leaves a config the daemon refuses.
 */
import { isMap, isSeq, YAMLMap, type Document } from "yaml";
import type { ConfigEdit, ConfigPath, ItemStatus, PlannedConfig } from "./import-types.js";

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Turns the flow collections on the way to `path` into block ones, creating missing maps. */
function blockPath(doc: Document, path: ConfigPath): void {
  for (let i = 1; i <= path.length; i++) {
    const node = doc.getIn(path.slice(0, i), true);
    if ((isMap(node) || isSeq(node)) && node.flow) node.flow = false;
  }
}

function cronIndex(doc: Document, id: unknown): number {
  const jobs = doc.getIn(["cron", "jobs"], true);
  if (!isSeq(jobs)) return -1;
  return jobs.items.findIndex((n) => isMap(n) && n.get("id") === id);
}

/** What an edit would change: "new" (absent), "update" or "unchanged". */
export function editStatus(doc: Document, e: ConfigEdit): ItemStatus {
  if (e.kind === "cron") {
    const i = cronIndex(doc, e.job.id);
    if (i < 0) return "new";
    const cur: unknown = (doc.getIn(["cron", "jobs", i], true) as YAMLMap | undefined)?.toJSON();
    return deepEqual(cur, e.job) ? "unchanged" : "update";
  }
  const cur: unknown = doc.getIn(e.path);
  const curJs: unknown =
    cur && typeof cur === "object" && "toJSON" in cur ? (cur as { toJSON(): unknown }).toJSON() : cur;
  if (e.kind === "add") {
    const list = Array.isArray(curJs) ? curJs : [];
    return e.values.every((v) => list.some((x) => deepEqual(x, v)))
      ? "unchanged"
      : list.length
        ? "update"
        : "new";
  }
  if (curJs === undefined) return "new";
  return deepEqual(curJs, e.value) ? "unchanged" : "update";
}

/** The combined status of a planned config change (new if any edit is new and none updates). */
export function plannedStatus(doc: Document, p: PlannedConfig): ItemStatus {
  const s = p.edits.map((e) => editStatus(doc, e));
  if (s.every((x) => x === "unchanged")) return "unchanged";
  if (s.some((x) => x === "update")) return "update";
  return "new";
}

/** Applies one edit to the document. */
export function applyEdit(doc: Document, e: ConfigEdit): void {
  if (e.kind === "cron") {
    const i = cronIndex(doc, e.job.id);
    blockPath(doc, ["cron", "jobs"]);
    if (i >= 0) doc.setIn(["cron", "jobs", i], doc.createNode(e.job));
    else if (isSeq(doc.getIn(["cron", "jobs"], true))) doc.addIn(["cron", "jobs"], doc.createNode(e.job));
    else doc.setIn(["cron", "jobs"], doc.createNode([e.job]));
    blockPath(doc, ["cron", "jobs"]);
    return;
  }
  if (e.kind === "add") {
    const node = doc.getIn(e.path, true);
    const list: unknown[] = isSeq(node) ? (node.toJSON() as unknown[]) : [];
    const missing = e.values.filter((v) => !list.some((x) => deepEqual(x, v)));
    if (missing.length === 0) return;
    if (isSeq(node)) {
      for (const v of missing) node.add(doc.createNode(v));
      node.flow = false;
    } else doc.setIn(e.path, doc.createNode(missing));
    return;
  }
  blockPath(doc, e.path.slice(0, -1));
  doc.setIn(e.path, doc.createNode(e.value));
  const node = doc.getIn(e.path, true);
  if (isMap(node)) node.flow = false;
}
