/**
 * System prompt builder. Lean by design (a "hi" turn must stay far below OpenClaw's 49,000
 * characters): identity and rules from the workspace files, skill names only. The system prompt holds
 * no clock and no per-message facts, so it is byte-identical from turn to turn and provider prompt
 * caches hit; the time and the origin go in a short context note after the newest message
 * ({@link PromptBuilder.volatile}, {@link withContextNote}).
 */
import type { ChatMessage } from "../models/types.js";
import type { Config } from "../config/schema.js";
import { pad2, WEEKDAYS, weekdayOf, zonedParts } from "../config/zoned-time.js";
import type { AgentDef } from "./agents.js";
import { WorkspaceFiles } from "./workspace-files.js";
import { PRIVATE_PROMPT_FILES } from "./private-context.js";

/** Workspace files included in the full prompt, in this order. */
export const PROMPT_FILES = [
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "USER.md",
  "TOOLS.md",
  "MEMORY.md",
] as const;
/** Start of the prompt's clock line (its own paragraph); a long-lived CLI engine leaves it out. */
export const NOW_PREFIX = "Now: ";
/** Files of the light prompt (heartbeat, cron). */
export const LIGHT_FILES = ["SOUL.md", "IDENTITY.md", "HEARTBEAT.md"] as const;

export interface PromptInput {
  config: Config;
  agent: AgentDef;
  /** The agent's rendered prompt file (catalog/agent-prompt.ts); replaces `agent.system_prompt`. */
  agentPrompt?: string;
  light?: boolean;
  /** Leave the owner's private files (USER.md, MEMORY.md) out: a group or a non-owner's chat. */
  withholdPrivate?: boolean;
  originLabel?: string;
  /** Compact skills list (names and one-line descriptions), from the skills loader. */
  skillsSection?: string;
  /** Names of the tools available this turn (to mention memory/skill usage only when present). */
  toolNames?: readonly string[];
  extra?: string;
  now: number;
}

const BASE_RULES = `You are a personal assistant running inside Familiar, a self-hosted daemon, talking to your owner through a chat channel.
Be concise and direct; use short markdown. Use tools when they help, and never invent tool results. Ask before doing anything destructive or irreversible.`;

export class PromptBuilder {
  constructor(private files = new WorkspaceFiles()) {}

  build(input: PromptInput): string {
    const { config, agent } = input;
    const max = config.agents.defaults.workspace_file_max_chars;
    const parts: string[] = [];
    parts.push(
      agent.description ? `${BASE_RULES}\nYour role (agent "${agent.id}"): ${agent.description}` : BASE_RULES,
    );
    const names = input.light ? LIGHT_FILES : PROMPT_FILES;
    for (const name of names) {
      if (input.withholdPrivate && PRIVATE_PROMPT_FILES.has(name)) continue;
      const text = this.files.read(config.workspace, name, max);
      if (text) parts.push(`## ${name}\n${text}`);
    }
    const own = input.agentPrompt ?? agent.system_prompt;
    if (own?.trim()) parts.push(own.trim());
    if (!input.light && input.skillsSection) parts.push(input.skillsSection);
    if (!input.light && !input.withholdPrivate && input.toolNames?.includes("memory_write"))
      parts.push("Save durable facts about the owner with memory_write; look things up with memory_search.");
    if (input.extra) parts.push(input.extra.trim());
    return parts.join("\n\n");
  }

  /** The facts that change from turn to turn (the clock, who wrote): sent after the history. */
  volatile(input: Pick<PromptInput, "config" | "originLabel" | "now">): string {
    const tz = input.config.timezone;
    const lines = [`${NOW_PREFIX}${formatNow(input.now, tz)} (${tz}).`];
    if (input.originLabel) lines.push(`Message from: ${input.originLabel}.`);
    return lines.join("\n");
  }
}

/** Marks the context note sent after the newest message (never stored in the history). */
export const CONTEXT_NOTE_PREFIX = "[context] ";

/**
 * The model messages with `note` as a system message just before the newest user message: the system
 * prompt, tools and older history stay a byte-identical prefix of the next turn's request, and the
 * newest message stays last (what the model answers). The user's own text is left as it is; history
 * already carries mid-conversation system messages for system events, so providers see nothing new.
 */
export function withContextNote(messages: readonly ChatMessage[], note: string): ChatMessage[] {
  const at = messages.findLastIndex((m) => m.role === "user");
  const msg: ChatMessage = { role: "system", content: `${CONTEXT_NOTE_PREFIX}${note}` };
  // One copy (a long session's history is thousands of messages, built every turn).
  const out = messages.slice(0, at <= 0 ? messages.length : at);
  out.push(msg);
  if (at > 0) for (let i = at; i < messages.length; i++) out.push(messages[i]!);
  return out;
}

/** The last formatted minute: every turn of the same minute reuses it (formatToParts is not cheap). */
let lastNow: { minute: number; timeZone: string; text: string } | undefined;

/** `Sun 2026-11-22 09:14` in the given zone. */
export function formatNow(now: number, timeZone: string): string {
  const minute = Math.floor(now / 60_000);
  if (lastNow && lastNow.minute === minute && lastNow.timeZone === timeZone) return lastNow.text;
  const text = formatMinute(now, timeZone);
  lastNow = { minute, timeZone, text };
  return text;
}

function formatMinute(now: number, timeZone: string): string {
  const p = zonedParts(now, timeZone);
  return `${WEEKDAYS[weekdayOf(p)]} ${p.y}-${pad2(p.m)}-${pad2(p.d)} ${pad2(p.h)}:${pad2(p.min)}`;
}
