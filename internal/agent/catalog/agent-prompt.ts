/**
 * An agent's prompt file (`prompt_file`): a `{{variable}}` template
 * (prompt-template.ts) rendered for each turn in place of the agent's `system_prompt`.
 *
 * Invariants:
 * - relative paths resolve against the workspace; the file is re-read when it changes (mtime/size,
 *   checked at most once a second, internal/agent/workspace-files.ts), so no turn pays for a read;
 * - a missing file, or one edited into an invalid template after load, never fails a turn: the
 *   built-in prompt (or `system_prompt`) is used and a warning is logged once per path and problem;
 * - load-time validation (`checkPromptFile`) reports unknown variables as errors naming file and variable.
 */
import { isAbsolute, resolve } from "node:path";
import type { AgentConfig, Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import type { ChatMessage } from "../../models/types.js";
import { WorkspaceFiles } from "../workspace-files.js";
import { pad2, zonedParts, type ZonedParts } from "../../config/zoned-time.js";
import { RESERVED_AGENT_KEYS } from "../agents.js";
import {
  loadTemplateFile,
  parseTemplate,
  templateLocation,
  renderTemplate,
  PromptTemplateError,
  type PromptTemplate,
  type TemplateVariable,
} from "./prompt-template.js";

/** Largest prompt file read (characters); longer files are cut with a marker. */
const MAX_PROMPT_CHARS = 32_000;
/** `{{history}}` renders at most this many earlier messages, each cut to HISTORY_ITEM_CHARS. */
const HISTORY_ITEMS = 20;
const HISTORY_ITEM_CHARS = 1_000;

/** The prompt file an agent names, if any. */
export function promptFileOf(agent: Pick<AgentConfig, "prompt_file">): string | undefined {
  return agent.prompt_file;
}

/** Absolute path of a prompt file. */
export function promptFilePath(file: string, workspace: string): string {
  return isAbsolute(file) ? file : resolve(workspace, file);
}

/**
 * Validates an agent's prompt file at load. Returns a warning when the file is missing (the agent
 * still loads and uses the built-in prompt); throws PromptTemplateError on unknown variables.
 */
export function checkPromptFile(
  agent: Pick<AgentConfig, "prompt_file">,
  workspace: string,
): { warning?: string } {
  const file = promptFileOf(agent);
  if (!file) return {};
  let warning: string | undefined;
  loadTemplateFile(file, workspace, (w) => (warning = w));
  return warning ? { warning } : {};
}

/**
 * Prompt-file problems of the agents in config.yaml, checked at load and on every reload: an unknown
 * variable is an error, a missing file a warning. Each names `agents.<id>.prompt_file` and the file.
 */
export function configPromptProblems(config: Config): {
  errors: { path: string; key: string; message: string }[];
  warnings: { path: string; key: string; message: string }[];
} {
  const errors: { path: string; key: string; message: string }[] = [];
  const warnings: { path: string; key: string; message: string }[] = [];
  for (const [id, def] of Object.entries(config.agents)) {
    if (RESERVED_AGENT_KEYS.has(id)) continue;
    const key = `agents.${id}.prompt_file`;
    try {
      const { warning } = checkPromptFile(def as AgentConfig, config.workspace);
      if (warning) warnings.push({ path: "config.yaml", key, message: `${key}: ${warning}` });
    } catch (err) {
      errors.push({ path: "config.yaml", key, message: `${key}: ${(err as Error).message}` });
    }
  }
  return { errors, warnings };
}

/** What a turn knows when the template is rendered. */
export interface PromptTurn {
  agentId: string;
  userInput: string;
  channel: string;
  /** The conversation so far, the current user message last. */
  history: readonly ChatMessage[];
  now: number;
}

/** Renders agents' prompt files for turns. One per host. */
export class AgentPromptFiles {
  private parsed = new Map<string, { text: string; tpl: PromptTemplate | PromptTemplateError }>();
  private warned = new Set<string>();

  constructor(
    private logger: Logger,
    private files = new WorkspaceFiles(),
  ) {}

  /**
   * The agent's prompt for this turn, or undefined when it has no prompt file or the file cannot be
   * used (then the caller keeps the built-in prompt / `system_prompt`).
   */
  render(agent: Pick<AgentConfig, "prompt_file">, config: Config, turn: PromptTurn): string | undefined {
    const file = promptFileOf(agent);
    if (!file) return undefined;
    const path = promptFilePath(file, config.workspace);
    // Through the workspace door: a prompt file that is a link (to /proc/self/environ, the token
    // file) is left out and logged once, like a missing one.
    const loc = templateLocation(file, config.workspace);
    const text = this.files.read(loc.root, loc.rel, MAX_PROMPT_CHARS);
    if (text === undefined) {
      this.warnOnce(
        `missing:${path}`,
        { agent: turn.agentId, path },
        `prompt file ${path} not found: using the built-in prompt`,
      );
      return undefined;
    }
    this.warned.delete(`missing:${path}`);
    let hit = this.parsed.get(path);
    if (!hit || hit.text !== text) {
      let tpl: PromptTemplate | PromptTemplateError;
      try {
        tpl = parseTemplate(text, path);
      } catch (err) {
        tpl = err as PromptTemplateError;
      }
      hit = { text, tpl };
      this.parsed.set(path, hit);
    }
    if (hit.tpl instanceof Error) {
      this.warnOnce(
        `invalid:${path}:${text.length}`,
        { agent: turn.agentId, path },
        `${hit.tpl.message}: using the built-in prompt`,
      );
      return undefined;
    }
    return renderTemplate(hit.tpl, templateValues(hit.tpl.variables, config, turn));
  }

  private warnOnce(key: string, fields: Record<string, string>, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(fields, msg);
  }
}

/** Values of the variables a template uses (only those are computed). */
export function templateValues(
  used: readonly TemplateVariable[],
  config: Config,
  turn: PromptTurn,
): Partial<Record<TemplateVariable, string>> {
  const out: Partial<Record<TemplateVariable, string>> = {};
  const tz = config.timezone;
  let local: ZonedParts | undefined;
  for (const v of used) {
    switch (v) {
      case "user_input":
        out.user_input = turn.userInput;
        break;
      case "history":
        out.history = historyText(turn.history);
        break;
      case "date":
        local ??= zonedParts(turn.now, tz);
        out.date = `${local.y}-${pad2(local.m)}-${pad2(local.d)}`;
        break;
      case "time":
        local ??= zonedParts(turn.now, tz);
        out.time = `${pad2(local.h)}:${pad2(local.min)}`;
        break;
      case "agent":
        out.agent = turn.agentId;
        break;
      case "timezone":
        out.timezone = tz;
        break;
      case "channel":
        out.channel = turn.channel;
        break;
      case "workspace":
        out.workspace = config.workspace;
        break;
    }
  }
  return out;
}

/** Earlier user and assistant messages (not the current one) as `User: ...` / `Assistant: ...` lines. */
function historyText(history: readonly ChatMessage[]): string {
  const earlier = history.slice(0, -1).filter((m) => m.role === "user" || m.role === "assistant");
  const lines: string[] = [];
  for (const m of earlier.slice(-HISTORY_ITEMS)) {
    const text = typeof m.content === "string" ? m.content : textOfParts(m.content);
    if (!text) continue;
    const cut = text.length > HISTORY_ITEM_CHARS ? `${text.slice(0, HISTORY_ITEM_CHARS)}…` : text;
    lines.push(`${m.role === "user" ? "User" : "Assistant"}: ${cut}`);
  }
  return lines.join("\n");
}

function textOfParts(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((p: unknown) =>
      p && typeof p === "object" && "text" in p && typeof p.text === "string" ? p.text : "",
    )
    .filter(Boolean)
    .join(" ");
}
