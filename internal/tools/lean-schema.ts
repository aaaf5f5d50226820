/**
 * Tool argument schemas as the model sees them: JSON schema from zod, without the noise.
 *
 * Why: tool schemas are most of the characters a plain "hi" turn sends (BENCHMARKS.md, prompt
 * cost), and every turn pays for them again. zod's export adds what a model never needs:
 * `"maximum": 9007199254740991` on every integer, `"additionalProperties": false` on every object and
 * a `$schema` URL. It also exports, by default, the *output* type, where fields with a default are
 * required; the model writes the *input*, where they are optional.
 *
 * Invariant: only annotations that do not change which arguments are valid for the model to send are
 * dropped (the arguments are still parsed with the full zod schema, and unknown fields still get an
 * error result naming them).
 */
import { z } from "zod";

/** JSON schema of a zod schema's input, stripped of annotations that only cost tokens. */
export function leanJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const js = z.toJSONSchema(schema, { unrepresentable: "any", io: "input" }) as Record<string, unknown>;
  delete js.$schema;
  return strip(js) as Record<string, unknown>;
}

function strip(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strip);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (k === "additionalProperties" && v === false) continue;
    if (k === "maximum" && v === Number.MAX_SAFE_INTEGER) continue;
    if (k === "minimum" && v === Number.MIN_SAFE_INTEGER) continue;
    // Property names are data, not annotations: recurse into their schemas, keep every key.
    out[k] = strip(v);
  }
  return out;
}
