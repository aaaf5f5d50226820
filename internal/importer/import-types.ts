/**
 * The vocabulary of an import: report items, config edits and the environment variables the owner
 * must set. Shared by the mapping, the plan, the apply step and the report.
 */

export type ImportArea =
  | "workspace"
  | "memory"
  | "skills"
  | "agents"
  | "models"
  | "channels"
  | "pairing"
  | "heartbeat"
  | "cron"
  | "sessions"
  | "settings"
  | "source";

/**
 * - new / update / unchanged: what the (dry) run does to Familiar;
 * - kept: the owner changed Familiar's copy since the last import, so it is left as it is;
 * - review: imported but not enabled, the owner must look first (a skill that runs code);
 * - skip: deliberately not imported (with why);
 * - cannot: Familiar has no equivalent (with why);
 * - note: something the owner should know about how the source was read;
 * - confirm: grants power (a foreign endpoint for the owner's secrets, an open door, a stranger as a
 *   target, an allow list, a pairing, an agent): shown, left out until the owner accepts its key;
 * - held: a skill's file the desk rules would hold (docs/security.md): not written until accepted.
 */
export type ItemStatus =
  "new" | "update" | "unchanged" | "kept" | "review" | "skip" | "cannot" | "note" | "confirm" | "held";

export interface ImportItem {
  area: ImportArea;
  name: string;
  status: ItemStatus;
  detail?: string;
  /** For `confirm` and `held` items, and the ones accepted: the word `--accept` takes. */
  key?: string;
}

/** An environment variable a `${VAR}` reference in config.yaml needs. */
export interface EnvVar {
  name: string;
  /** Where the value was in OpenClaw, so the owner knows what to copy. */
  from: string;
}

export type ConfigPath = (string | number)[];

/** One edit of config.yaml, applied to its YAML document (comments survive). */
export type ConfigEdit =
  | { kind: "set"; path: ConfigPath; value: unknown }
  /** Appends values not yet in the list at `path`. */
  | { kind: "add"; path: ConfigPath; values: unknown[] }
  /** Replaces the `cron.jobs` entry with this id, or appends it. */
  | { kind: "cron"; job: Record<string, unknown> };

/** A config change with the report item it belongs to (its status is computed against config.yaml). */
export interface PlannedConfig {
  item: Omit<ImportItem, "status"> & { status?: ItemStatus };
  edits: ConfigEdit[];
  /** Set when the change grants power: its `--accept` key and why it is asked. */
  risk?: { key: string; why: string };
}

/** What an import did (or, on a dry run, would do). */
export interface ImportResult {
  from: string;
  version: string | undefined;
  configFile: string;
  dryRun: boolean;
  items: ImportItem[];
  env: EnvVar[];
  nextSteps: string[];
}
