/**
 * Chat commands shared by every channel (Telegram, Discord) and the web/terminal chat. They run
 * against the AgentHost and a few injected parts and return the reply text; the caller delivers it
 * (plain text, never through the model).
 */
import type { CoreContext } from "../runtime/context.js";
import type { AgentHost } from "../core/host.js";
import { listAgents, type AgentSource } from "../agent/agents.js";
import type { AgentChoiceStore } from "./agent-choice.js";
import { modelChoiceProblem } from "../models/model-choice.js";
import type { MediaParts } from "../media/media-parts.js";
import { voiceCommand } from "./voice-command.js";

/** Metadata of one command (Telegram setMyCommands, Discord slash registration, /help). */
export interface CommandSpec {
  name: string;
  description: string;
  /** Argument hint, e.g. `[name]`. */
  args?: string;
}

/** Every chat command, in /help order. Descriptions fit Telegram's 3-256 character rule. */
export const CHAT_COMMANDS: readonly CommandSpec[] = [
  { name: "start", description: "Start talking to the assistant" },
  { name: "help", description: "List the commands" },
  { name: "new", description: "Start a new conversation" },
  { name: "reset", description: "Start a new conversation (same as /new)" },
  { name: "stop", description: "Stop the current answer" },
  { name: "status", description: "Model, session size, tokens used, uptime" },
  { name: "model", description: "Show or set the model of this chat", args: "[provider/model|default]" },
  {
    name: "compact",
    description: "Summarise the conversation to save context",
    args: "[keep=N] [mask=on|off] [strategy=auto|manual|off] [model=p/m] [instructions]",
  },
  { name: "usage", description: "Tokens used today and in this session" },
  { name: "whoami", description: "Your user id and this chat's session" },
  { name: "approve", description: "Approve a pending action", args: "<id> [hash] [once|host|session]" },
  { name: "deny", description: "Deny a pending action", args: "<id>" },
  { name: "agent", description: "Show or choose the agent of this chat", args: "[id|default]" },
  { name: "voice", description: "Answer this chat with voice notes", args: "[on|off]" },
];

const NAMES = new Set(CHAT_COMMANDS.map((c) => c.name));

/** A parsed command. */
export interface ParsedCommand {
  name: string;
  args: string;
}

/**
 * Parses `/name args` (also `/name@botname args`). Returns undefined for text that is not one of our
 * commands, or that is addressed to another bot.
 */
export function parseCommand(text: string, botUsername?: string): ParsedCommand | undefined {
  const m = /^\/([a-zA-Z0-9_]+)(?:@([a-zA-Z0-9_]+))?(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!m) return undefined;
  const name = (m[1] ?? "").toLowerCase();
  if (!NAMES.has(name)) return undefined;
  if (m[2] && botUsername && m[2].toLowerCase() !== botUsername.toLowerCase()) return undefined;
  return { name, args: (m[3] ?? "").trim() };
}

/** Who sent the command and where. */
export interface CommandContext {
  channel: string;
  sessionKey: string;
  agentId: string;
  /** Scope of the per-chat agent choice: `<channel>:<chatId>[:<threadId>]`. */
  chatScope: string;
  chatId: string;
  sender: { id: string; name?: string };
  /**
   * Who answers approval requests from here: the chat's reply target (`telegram:123[:topic]`,
   * `gateway:conn:7`), which settles only requests sent to it, or `owner`, which settles any (the
   * owner's CLI and owner-role gateway clients).
   */
  approver: { target: string } | "owner";
}

/** Resolves approval requests (internal/tools/approvals.ts implements it). */
export interface ApprovalResolver {
  resolve(
    id: string,
    decision: "approved" | "denied",
    opts?: { fromTarget?: string; scope?: "once" | "target" | "session"; hash?: string },
  ): boolean;
  /** Why an id cannot be settled from `fromTarget` (see ApprovalManager.access). */
  access?(id: string, fromTarget?: string): "ok" | "unknown" | "foreign";
  /** A pending request with its whole question text (the "Show all" button). */
  show?(id: string): { text: string; payloadHash?: string } | undefined;
}

/** The refusal for an approval that was sent to another chat. */
export function foreignApproval(id: string): string {
  return `Approval ${id} was sent to another chat: only that chat or the owner (familiar approvals, or an owner gateway client) can decide it.`;
}

export interface CommandDeps {
  ctx: CoreContext;
  host: AgentHost;
  choices: AgentChoiceStore;
  approvals?: ApprovalResolver;
  agentSources?: readonly AgentSource[];
  /** Speech settings and the per-chat voice switch (`/voice`). */
  media?: MediaParts;
}

/** Runs a command. Returns the reply text. Never throws: failures become a short reply. */
export async function runCommand(cmd: ParsedCommand, c: CommandContext, deps: CommandDeps): Promise<string> {
  try {
    return await dispatch(cmd, c, deps);
  } catch (err) {
    return `/${cmd.name} failed: ${(err as Error).message}`;
  }
}

function helpText(): string {
  return [
    "Commands:",
    ...CHAT_COMMANDS.map((s) => `/${s.name}${s.args ? ` ${s.args}` : ""} - ${s.description}`),
  ].join("\n");
}

async function dispatch(cmd: ParsedCommand, c: CommandContext, deps: CommandDeps): Promise<string> {
  const { host, ctx } = deps;
  switch (cmd.name) {
    case "start":
      return `Hi${c.sender.name ? ` ${c.sender.name}` : ""}! Send me a message and I will answer.\n\n${helpText()}`;
    case "help":
      return helpText();
    case "new":
    case "reset": {
      host.abort(c.sessionKey);
      host.reset(c.sessionKey, `/${cmd.name}`);
      return "Started a new conversation.";
    }
    case "stop":
      return host.abort(c.sessionKey) ? "Stopped." : "Nothing is running.";
    case "status": {
      const info = host.sessionInfo(c.sessionKey, c.agentId);
      return [
        `Agent: ${info.agentId}`,
        `Model: ${info.model}${info.modelOverride ? " (set for this chat)" : ""}`,
        `Session: ${info.messageCount} messages, ~${fmt(info.estimatedTokens)} tokens of context`,
        `Tokens used in this session: ${fmt(info.usage.total)} (in ${fmt(info.usage.input)}, out ${fmt(info.usage.output)})`,
        `State: ${info.running ? "answering" : "idle"}${info.queued > 0 ? `, ${info.queued} queued` : ""}`,
        `Uptime: ${duration(ctx.clock.now() - ctx.startedAt)}`,
      ].join("\n");
    }
    case "model": {
      const arg = cmd.args;
      if (!arg) {
        const info = host.sessionInfo(c.sessionKey, c.agentId);
        return `Model: ${info.model}${info.modelOverride ? " (set for this chat; /model default to clear)" : ""}`;
      }
      if (["default", "clear", "reset"].includes(arg.toLowerCase())) {
        host.clearSessionModel(c.sessionKey);
        return `Model reset to the default: ${host.resolveModel(c.sessionKey, c.agentId)}`;
      }
      const problem = modelChoiceProblem(ctx.config(), arg);
      if (problem)
        return `Model not changed: ${problem}.\nUsage: /model <provider>/<model> (or /model default)`;
      host.setSessionModel(c.sessionKey, arg);
      return `Model for this chat: ${arg}`;
    }
    case "compact": {
      const r = await host.compact(c.sessionKey, cmd.args || undefined);
      return `Compacted the conversation: ~${fmt(r.tokensBefore)} -> ~${fmt(r.tokensAfter)} tokens.`;
    }
    case "usage":
      return usageText(c, deps);
    case "whoami":
      return [
        `You: ${c.sender.name ? `${c.sender.name} ` : ""}(id ${c.sender.id}) on ${c.channel}`,
        `Chat: ${c.chatId}`,
        `Agent: ${c.agentId}`,
        `Session: ${c.sessionKey}`,
      ].join("\n");
    case "approve":
    case "deny": {
      // `/approve <id> [hash] [scope]`: a button press carries the hash of what it showed.
      const [id = "", ...rest] = cmd.args.split(/\s+/);
      const hash = rest[0] !== undefined && /^[0-9a-f]{12,64}$/i.test(rest[0]) ? rest.shift() : undefined;
      const scopeWord = rest[0];
      if (!id) return `Usage: /${cmd.name} <id>${cmd.name === "approve" ? " [once|host|session]" : ""}`;
      if (!deps.approvals) return "Approvals are not available.";
      const scope = cmd.name === "approve" ? approvalScope(scopeWord) : "once";
      if (scope === undefined) return `Usage: /approve <id> [once|host|session] (got "${scopeWord ?? ""}")`;
      const from = c.approver === "owner" ? {} : { fromTarget: c.approver.target };
      const ok = deps.approvals.resolve(id, cmd.name === "approve" ? "approved" : "denied", {
        ...from,
        ...(scope !== "once" ? { scope } : {}),
        ...(hash !== undefined ? { hash } : {}),
      });
      if (!ok && deps.approvals.access?.(id, from.fromTarget) === "foreign") return foreignApproval(id);
      const shown = ok || hash === undefined ? undefined : deps.approvals.show?.(id)?.payloadHash;
      if (shown !== undefined && !shown.startsWith(hash!.toLowerCase()))
        return `Approval ${id} shows another payload than the one you answered: nothing was decided. Look at the question again.`;
      if (!ok && scope !== "once" && deps.approvals.access?.(id, from.fromTarget) === "ok")
        return `Approval ${id} does not offer "${scopeWord}": answer /approve ${id} (once) or /deny ${id}.`;
      if (!ok) return `No pending approval ${id} (it may have expired or been decided).`;
      if (cmd.name === "deny") return `Denied ${id}.`;
      return scope === "once"
        ? `Approved ${id}.`
        : `Approved ${id} ${scope === "session" ? "for the rest of this session" : "for this host or target"} (familiar approvals grants lists it, revoke ends it).`;
    }
    case "agent":
      return agentCommand(cmd.args, c, deps);
    case "voice":
      return voiceCommand(cmd.args, c, deps.media);
    default:
      return helpText();
  }
}

/** `/approve <id> [once|host|target|session]`: the word after the id; undefined when unknown. */
function approvalScope(word: string | undefined): "once" | "target" | "session" | undefined {
  const w = (word ?? "once").toLowerCase();
  if (w === "once") return "once";
  if (w === "host" || w === "target" || w === "chat") return "target";
  if (w === "session") return "session";
  return undefined;
}

function agentCommand(arg: string, c: CommandContext, deps: CommandDeps): string {
  const cfg = deps.ctx.config();
  const ids = listAgents(cfg, deps.agentSources ?? []).map((a) => a.id);
  if (!arg) {
    const explicit = deps.choices.choice(c.chatScope);
    return [
      `Agent: ${c.agentId}${explicit ? " (chosen for this chat; /agent default to clear)" : ""}`,
      `Available: ${ids.join(", ")}`,
    ].join("\n");
  }
  if (["default", "clear", "reset"].includes(arg.toLowerCase())) {
    deps.choices.clear(c.chatScope);
    return "This chat uses the routed/default agent again.";
  }
  if (!ids.includes(arg)) return `Unknown agent "${arg}". Available: ${ids.join(", ")}`;
  deps.choices.set(c.chatScope, arg);
  return `This chat now talks to agent ${arg}.`;
}

function usageText(c: CommandContext, deps: CommandDeps): string {
  const { ctx, host } = deps;
  const now = ctx.clock.now();
  const since = startOfDay(now, ctx.config().timezone);
  const today = ctx.db
    .prepare<[number], { input: number; output: number; total: number; cost: number | null; calls: number }>(
      `SELECT COALESCE(SUM(input),0) AS input, COALESCE(SUM(output),0) AS output, COALESCE(SUM(total),0) AS total,
         SUM(cost) AS cost, COUNT(*) AS calls FROM usage WHERE created_at >= ?`,
    )
    .get(since);
  const info = host.sessionInfo(c.sessionKey, c.agentId);
  const cost = today?.cost != null ? `, ~$${today.cost.toFixed(4)}` : "";
  return [
    `Today: ${fmt(today?.total ?? 0)} tokens (in ${fmt(today?.input ?? 0)}, out ${fmt(today?.output ?? 0)}) over ${today?.calls ?? 0} model calls${cost}`,
    `This session: ${fmt(info.usage.total)} tokens (in ${fmt(info.usage.input)}, out ${fmt(info.usage.output)})`,
  ].join("\n");
}

/** Midnight of `now`'s day in time zone `tz` (falls back to UTC on an unknown zone). */
export function startOfDay(now: number, tz: string | undefined): number {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat("en-US", {
      timeZone: tz || "UTC",
      hour12: false,
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    }).formatToParts(new Date(now));
  } catch {
    return now - (now % 86_400_000);
  }
  const get = (t: string): number => Number(parts.find((p) => p.type === t)?.value ?? 0) % 24;
  const h = get("hour");
  const m = Number(parts.find((p) => p.type === "minute")?.value ?? 0);
  const s = Number(parts.find((p) => p.type === "second")?.value ?? 0);
  return now - (now % 1000) - ((h * 60 + m) * 60 + s) * 1000;
}

function fmt(n: number): string {
  return n.toLocaleString("en-US");
}

function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h ${m}m`;
  if (h > 0) return `${h}h ${m}m`;
  return `${m}m ${s % 60}s`;
}
