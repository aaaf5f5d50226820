/**
 * Key-path redaction for log objects, done once per log call on the object itself.
 *
 * Why not pino's `redact` option: its paths start with a wildcard (`*.token`), and for those pino runs
 * fast-redact over EVERY field of every line, numbers and strings included. That was ~40 µs per line,
 * a measurable share of a turn's CPU under load (issue 26). This walks only the objects a line holds,
 * to the depth the paths reach, and copies an object only when it holds a key to censor, so the
 * caller's object is never modified.
 *
 * The same paths as before: depth 1 is a key of the logged object itself.
 *   depth 1: api_key apiKey token secret authorization password
 *   depth 2: the same plus Authorization (e.g. `headers.Authorization`)
 *   depth 3 and 4: api_key token secret
 */

/** What replaces a redacted value. */
export const CENSOR = "[REDACTED]";

/** Keys censored at the top of a log object (and of a child logger's bindings). */
export const TOP_LEVEL_SECRET_KEYS = ["api_key", "apiKey", "token", "secret", "authorization", "password"];

const TOP = new Set(TOP_LEVEL_SECRET_KEYS);
const SECOND = new Set([...TOP, "Authorization"]);
const DEEP = new Set(["api_key", "token", "secret"]);
/** Keys to censor by depth (index 0 = keys of the logged object). */
const BY_DEPTH: readonly ReadonlySet<string>[] = [TOP, SECOND, DEEP, DEEP];

type Obj = Record<string, unknown>;

function walkable(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer);
}

/**
 * `obj` with every secret key censored, or `obj` itself when it holds none (the common case: no copy).
 */
export function redactKeys<T>(obj: T, depth = 0): T {
  if (!walkable(obj) || depth >= BY_DEPTH.length) return obj;
  const names = BY_DEPTH[depth]!;
  let copy: Obj | undefined;
  const src = obj as Obj;
  for (const k of Object.keys(src)) {
    const v = src[k];
    let next: unknown = v;
    if (names.has(k) && v !== undefined) next = CENSOR;
    else if (walkable(v)) next = redactKeys(v, depth + 1);
    if (next !== v) {
      copy ??= copyOf(src);
      copy[k] = next;
    }
  }
  return (copy ?? obj) as T;
}

function copyOf(o: Obj): Obj {
  if (Array.isArray(o)) return o.slice() as unknown as Obj;
  // An error keeps its prototype and its own non-enumerable message and stack, so pino's error
  // serializer still sees the same type, message and stack.
  // (V8's `stack` is an accessor bound to the original, so it is copied as a value.)
  if (o instanceof Error) {
    const c = Object.create(Object.getPrototypeOf(o) as object, Object.getOwnPropertyDescriptors(o)) as Obj;
    Object.defineProperty(c, "stack", { value: o.stack, writable: true, configurable: true });
    return c;
  }
  return { ...o };
}
