/**
 * Hashing of tool calls and results for loop detection. A call is identified by its tool name plus the
 * SHA-256 of the stable (key-sorted) JSON of its arguments, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are
 * the same call. Arguments may arrive as the model's raw JSON string; it is parsed first so formatting
 * differences do not matter, and hashed verbatim when it is not valid JSON.
 */
import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth. `undefined` members are dropped like JSON.stringify does;
 * non-finite numbers become `null`. Cycles are not expected in tool arguments and are cut with a marker.
 */
export function stableJson(value: unknown): string {
  const seen = new Set<object>();
  const walk = (v: unknown): string => {
    if (v === null || typeof v !== "object") {
      if (typeof v === "number" && !Number.isFinite(v)) return "null";
      if (typeof v === "bigint") return JSON.stringify(v.toString());
      const s = JSON.stringify(v);
      return s === undefined ? "null" : s;
    }
    if (seen.has(v)) return '"[cycle]"';
    seen.add(v);
    let out: string;
    if (Array.isArray(v)) {
      out = `[${v.map((x) => walk(x)).join(",")}]`;
    } else {
      const rec = v as Record<string, unknown>;
      const keys = Object.keys(rec)
        .filter((k) => rec[k] !== undefined && typeof rec[k] !== "function")
        .sort();
      out = `{${keys.map((k) => `${JSON.stringify(k)}:${walk(rec[k])}`).join(",")}}`;
    }
    seen.delete(v);
    return out;
  };
  return walk(value);
}

/** SHA-256 hex of a string. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Normalises arguments: a JSON string is parsed; anything else is used as is. */
function normaliseArgs(args: unknown): unknown {
  if (typeof args !== "string") return args;
  const trimmed = args.trim();
  if (trimmed === "") return {};
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return { __raw: args };
  }
}

/** `<tool>:<sha256(stableJson(args))>` — the identity of a call for every detector. */
export function callHash(name: string, args: unknown): string {
  return `${name}:${sha256(stableJson(normaliseArgs(args)))}`;
}

/** Hash of a tool result text; identical outputs mean "no progress". */
export function resultHash(resultText: string): string {
  return sha256(resultText);
}
