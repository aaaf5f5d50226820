/**
 * Secrets from OpenClaw become `${VAR}` references in config.yaml, never values. Invariant: the
 * function below returns a reference string and, when the owner must set a variable, its name and
 * where OpenClaw kept the value; the secret itself is never returned, so it cannot be written.
 */
import type { EnvVar } from "./import-types.js";

export interface SecretOut {
  /** What goes into config.yaml: always `${NAME}`. */
  ref: string;
  /** The variable to set, when the value is not already in the environment under that name. */
  env?: EnvVar;
  /**
   * True when OpenClaw named an environment variable (`${VAR}`, a SecretRef `env`): the value is
   * whatever the owner keeps under that name, perhaps a secret meant for another service, not a value
   * copied out of openclaw.json.
   */
  borrowed?: boolean;
}

/** An environment variable name from any text: upper case, [A-Z0-9_], not starting with a digit. */
export function envName(s: string): string {
  const n = s
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return /^[0-9]/.test(n) ? `_${n}` : n || "SECRET";
}

/**
 * Maps an OpenClaw secret (a plain string, a `${VAR}` string, or a SecretRef object
 * `{source: "env" | "file" | "exec" | "store", id}`) to a reference. Undefined when there is none.
 */
export function secretRef(value: unknown, suggested: string, where: string): SecretOut | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string") {
    const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value.trim());
    if (m?.[1])
      return {
        ref: `\${${m[1]}}`,
        env: { name: m[1], from: `already an environment variable in OpenClaw (${where})` },
        borrowed: true,
      };
    const name = envName(suggested);
    return { ref: `\${${name}}`, env: { name, from: `${where} in openclaw.json` } };
  }
  if (typeof value === "object" && !Array.isArray(value)) {
    const o = value as { source?: unknown; id?: unknown; provider?: unknown };
    const id = typeof o.id === "string" ? o.id : undefined;
    if (o.source === "env" && id && /^[A-Za-z_][A-Za-z0-9_]*$/.test(id))
      return {
        ref: `\${${id}}`,
        env: { name: id, from: `OpenClaw read it from the environment variable ${id} (${where})` },
        borrowed: true,
      };
    const name = envName(suggested);
    return {
      ref: `\${${name}}`,
      env: { name, from: `OpenClaw SecretRef ${String(o.source ?? "?")}:${id ?? "?"} (${where})` },
    };
  }
  return undefined;
}
