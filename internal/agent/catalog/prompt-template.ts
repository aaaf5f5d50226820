/**
 * Prompt templates with `{{variable}}` interpolation. Unknown variables are an error at load time
 * (not a silent empty string at send time); a missing template file falls back to the built-in
 * prompt with a warning.
 */
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { reportRefusal } from "../../workspace/refusal-log.js";
import { isWorkspaceError } from "../../workspace/workspace-error.js";
import { readWorkspaceFileSync } from "../../workspace/workspace-door.js";

export const TEMPLATE_VARIABLES = [
  "user_input",
  "history",
  "date",
  "time",
  "agent",
  "timezone",
  "channel",
  "workspace",
] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];

export class PromptTemplateError extends Error {
  readonly code = "PROMPT_TEMPLATE_INVALID";
  constructor(message: string) {
    super(message);
    this.name = "PromptTemplateError";
  }
}

const VAR = /\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g;

/** A parsed template: the text and the variables it uses (all known). */
export interface PromptTemplate {
  source: string;
  text: string;
  variables: TemplateVariable[];
}

/** Validates template text; throws naming every unknown variable. */
export function parseTemplate(text: string, source: string): PromptTemplate {
  const used = new Set<string>();
  for (const m of text.matchAll(VAR)) used.add(m[1] ?? "");
  const unknown = [...used].filter((v) => !(TEMPLATE_VARIABLES as readonly string[]).includes(v));
  if (unknown.length > 0)
    throw new PromptTemplateError(
      `${source}: unknown template variable(s) ${unknown.map((u) => `{{${u}}}`).join(", ")} (known: ${TEMPLATE_VARIABLES.join(", ")})`,
    );
  return { source, text, variables: [...used] as TemplateVariable[] };
}

/** Largest template file read (bytes); a bigger one is refused. */
export const MAX_TEMPLATE_BYTES = 256 * 1024;

/**
 * Where a template file is read: beneath the workspace (`root` = the workspace, `rel` inside it) when
 * the path stays inside it, else beneath its own folder (an owner's file outside the workspace, which
 * only config.yaml may name: workspace agent files and the API refuse such paths at load). Either way
 * it is read through the workspace door: no link followed, regular files only, capped.
 */
export function templateLocation(file: string, baseDir: string): { root: string; rel: string } {
  const base = resolve(baseDir);
  const abs = isAbsolute(file) ? resolve(file) : resolve(base, file);
  const rel = relative(base, abs);
  if (rel !== "" && rel !== ".." && !rel.startsWith(".." + sep) && !isAbsolute(rel))
    return { root: base, rel };
  return { root: dirname(abs), rel: basename(abs) };
}

/**
 * Loads a template file relative to `baseDir`. Returns undefined (and calls `warn`) when the file is
 * missing or refused (a link, not a regular file, too large), so the caller falls back to the
 * built-in prompt; throws on unknown variables.
 */
export function loadTemplateFile(
  file: string,
  baseDir: string,
  warn: (msg: string) => void,
): PromptTemplate | undefined {
  const path = isAbsolute(file) ? file : resolve(baseDir, file);
  const { root, rel } = templateLocation(file, baseDir);
  let text: string | undefined;
  try {
    text = readWorkspaceFileSync(root, rel, { maxBytes: MAX_TEMPLATE_BYTES })?.text;
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    if (err.code !== "FILE_NOT_FOUND") {
      reportRefusal(err, "prompt template");
      warn(`prompt file ${path} refused (${err.message}): using the built-in prompt`);
      return undefined;
    }
  }
  if (text === undefined) {
    warn(`prompt file ${path} not found: using the built-in prompt`);
    return undefined;
  }
  return parseTemplate(text, path);
}

/** Fills a template. Values not given render as empty strings (all variables are known). */
export function renderTemplate(t: PromptTemplate, values: Partial<Record<TemplateVariable, string>>): string {
  return t.text.replace(VAR, (_m, name: string) => values[name as TemplateVariable] ?? "");
}
