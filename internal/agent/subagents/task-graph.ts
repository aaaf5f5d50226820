/**
 * Dispatch task graphs: validation before anything runs (duplicate ids, unknown dependencies, cycles,
 * each named), topological order, and `{{<id>.output}}` interpolation.
 */
export interface GraphTask {
  id: string;
  agent?: string;
  message: string;
  depends_on?: string[];
  blocking?: boolean;
  timeout_seconds?: number;
}

export class TaskGraphError extends Error {
  readonly code = "DISPATCH_INVALID_GRAPH";
  constructor(message: string) {
    super(message);
    this.name = "TaskGraphError";
  }
}

/** Validates and returns the tasks in a topological order (stable: input order among ready tasks). */
export function validateGraph(tasks: readonly GraphTask[]): GraphTask[] {
  if (tasks.length === 0) throw new TaskGraphError("the task graph is empty");
  const ids = new Map<string, GraphTask>();
  const dups = new Set<string>();
  for (const t of tasks) {
    if (ids.has(t.id)) dups.add(t.id);
    ids.set(t.id, t);
  }
  if (dups.size > 0) throw new TaskGraphError(`duplicate task ids: ${[...dups].join(", ")}`);
  const unknown: string[] = [];
  for (const t of tasks) for (const d of t.depends_on ?? []) if (!ids.has(d)) unknown.push(`${t.id} -> ${d}`);
  if (unknown.length > 0) throw new TaskGraphError(`unknown dependencies: ${unknown.join(", ")}`);
  for (const t of tasks) {
    for (const m of t.message.matchAll(/\{\{([^}.]+)\.output\}\}/g)) {
      const ref = m[1] ?? "";
      if (!ids.has(ref))
        throw new TaskGraphError(`task ${t.id} refers to {{${ref}.output}} but there is no task ${ref}`);
      if (!(t.depends_on ?? []).includes(ref))
        throw new TaskGraphError(
          `task ${t.id} uses {{${ref}.output}} but does not list ${ref} in depends_on`,
        );
    }
  }
  // Kahn's algorithm; whatever is left over is on or behind a cycle.
  const indeg = new Map(tasks.map((t) => [t.id, (t.depends_on ?? []).length]));
  const order: GraphTask[] = [];
  const ready = tasks.filter((t) => (indeg.get(t.id) ?? 0) === 0);
  while (ready.length > 0) {
    const t = ready.shift() as GraphTask;
    order.push(t);
    for (const u of tasks) {
      if ((u.depends_on ?? []).includes(t.id)) {
        const n = (indeg.get(u.id) ?? 0) - 1;
        indeg.set(u.id, n);
        if (n === 0) ready.push(u);
      }
    }
  }
  if (order.length < tasks.length) {
    const stuck = tasks.filter((t) => !order.includes(t)).map((t) => t.id);
    throw new TaskGraphError(`the task graph has a cycle among: ${findCycle(tasks, stuck).join(" -> ")}`);
  }
  return order;
}

function findCycle(tasks: readonly GraphTask[], stuck: string[]): string[] {
  const deps = new Map(tasks.map((t) => [t.id, t.depends_on ?? []]));
  for (const start of stuck) {
    const path: string[] = [];
    const seen = new Set<string>();
    let cur: string | undefined = start;
    while (cur && !seen.has(cur)) {
      seen.add(cur);
      path.push(cur);
      cur = (deps.get(cur) ?? []).find((d) => stuck.includes(d));
    }
    if (cur) return [...path.slice(path.indexOf(cur)), cur];
  }
  return stuck;
}

export const OUTPUT_CAP = 4000;

/** Replaces `{{id.output}}` with that task's output, capped at 4000 characters (truncation marked). */
export function interpolate(message: string, outputs: ReadonlyMap<string, string>): string {
  return message.replace(/\{\{([^}.]+)\.output\}\}/g, (_m, id: string) => {
    const out = outputs.get(id) ?? "";
    return out.length > OUTPUT_CAP
      ? `${out.slice(0, OUTPUT_CAP)}\n[... truncated ${out.length - OUTPUT_CAP} characters]`
      : out;
  });
}
