/**
 * Which tool calls are sinks: what, in a tainted session, could carry the owner's data out or act
 * beyond the conversation, and so asks the owner first (docs/security.md, "Prompt-injection
 * containment"). Egress of `web_fetch` is not classified here: the tool asks the egress gate on
 * every hop, redirects included (egress-policy.ts).
 *
 * Invariant: a call this module cannot read (bad JSON, unknown shape) of a sink tool is a sink:
 * classification fails closed.
 */
import { zoneOf } from "../../workspace/zones.js";
import type { Config } from "../../config/schema.js";
import { visibleLine } from "../../core/visible-text.js";
import type { SinkKind } from "./grant-store.js";

/** A sink call, described for the owner's question and the grant it may create. */
export interface Sink {
  kind: SinkKind;
  /** What a "target" grant covers: a chat target, an agent, an MCP server; `*` when only session grants fit. */
  target: string;
  /** "send a message to telegram:999", completing "it now wants to ..." (names escaped, one line). */
  action: string;
  /**
   * The whole thing that runs or goes out, never cut: the command, the message text, the URL, the
   * file, the job, the arguments. Shown in the question and hashed (approval-text.ts).
   */
  payload: string;
}

/** What classification needs beyond the call. */
export interface SinkEnv {
  config: Config;
  /** The chat the turn came from: a reply or file to it is not a sink (unless `strangerTainted`). */
  replyTarget?: string | undefined;
  /**
   * True when someone other than the owner wrote into this session (a group member, a paired user):
   * a send or file to the turn's own chat is then a sink too (`send_file USER.md` into the group the
   * stranger is in would otherwise go out unasked).
   */
  strangerTainted?: boolean;
  /** True when the agent has tools that are sinks (delegation to it is one). Unknown agent: true. */
  agentHasSinks: (agentId: string | undefined) => boolean;
}

/** A value as text, whole (never cut: the question shows it all and the answer is bound to it). */
const whole = (s: unknown): string => (typeof s === "string" ? s : JSON.stringify(s ?? ""));
/** A name inside a sentence (target, path, agent): one line, controls and bidi marks escaped. */
const nameOf = (s: unknown): string => visibleLine(whole(s));

function str(o: Record<string, unknown>, k: string): string | undefined {
  const v = o[k];
  return typeof v === "string" ? v : undefined;
}

/** Normalises a workspace-relative path for the config-file check. */
function relPath(p: string, workspace: string): string {
  let r = p.replace(/\\/g, "/");
  if (r.startsWith(workspace.replace(/\\/g, "/") + "/")) r = r.slice(workspace.length + 1);
  return r.replace(/^(\.\/)+/, "").replace(/^\/+/, "");
}

/**
 * True when a path names a file of the mind that configures agents: every mind path (prompt files,
 * `HEARTBEAT.md`, `agents/`, `skills/`, templates, prompts; workspace/zones.ts) except memory, whose
 * writes are labelled with the writer's taint instead.
 */
export function isConfigPath(p: string, workspace: string): boolean {
  const r = relPath(p, workspace);
  if (zoneOf(r) !== "mind") return false;
  const first = (r.split("/").find((x) => x && x !== ".") ?? "").toLowerCase();
  return first !== "memory.md" && first !== "memory";
}

/** The MCP server of a tool name `mcp__<server>__<tool>`, if it is one. */
export function mcpServerOf(toolName: string): string | undefined {
  const m = /^mcp__(.+?)__/.exec(toolName);
  return m?.[1];
}

/** True when the MCP server is marked `trusted: true` (names are compared as the tool names spell them). */
export function mcpTrusted(config: Config, server: string): boolean {
  for (const [name, s] of Object.entries(config.mcp.servers))
    if (name.replace(/[^a-zA-Z0-9_-]/g, "_") === server) return s.trusted;
  return false;
}

/** The sink a call is, or undefined when it is not one. */
export function classifySink(name: string, rawArgs: string, env: SinkEnv): Sink | undefined {
  const sinkTools = [
    "send_message",
    "send_file",
    "exec",
    "cron",
    "write_file",
    "edit_file",
    "delegate",
    "dispatch",
  ];
  const server = mcpServerOf(name);
  if (!sinkTools.includes(name) && server === undefined) return undefined;
  let args: Record<string, unknown>;
  try {
    const parsed: unknown = rawArgs.trim() === "" ? {} : JSON.parse(rawArgs);
    args =
      parsed && typeof parsed === "object" && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : {};
  } catch {
    args = {};
  }
  const cfg = env.config;
  const own = (target: string | undefined): boolean =>
    !!env.replyTarget && target === env.replyTarget && !env.strangerTainted;
  switch (name) {
    case "send_message": {
      const target = str(args, "target") ?? "?";
      if (own(target)) return undefined;
      return {
        kind: "send",
        target,
        action: `send a message to ${nameOf(target)}`,
        payload: whole(args.text),
      };
    }
    case "send_file": {
      const target = str(args, "target") ?? env.replyTarget;
      if (target === undefined || own(target)) return undefined;
      return {
        kind: "send",
        target,
        action: `send a file to ${nameOf(target)}`,
        payload: `file: ${nameOf(args.path)}${args.caption !== undefined ? `\ncaption: ${whole(args.caption)}` : ""}`,
      };
    }
    case "exec": {
      const sb = cfg.tools.exec.sandbox;
      // Without network the sandbox cannot send anything out; unsandboxed commands ask already.
      if (!sb.enabled || !sb.network) return undefined;
      return {
        kind: "exec",
        target: "*",
        action: "run a command with network access",
        payload: whole(args.command),
      };
    }
    case "cron": {
      const action = str(args, "action");
      if (action === "list") return undefined;
      return {
        kind: "schedule",
        target: "*",
        action: `${nameOf(action ?? "change")} a scheduled job`,
        payload: JSON.stringify(args, null, 2),
      };
    }
    case "write_file":
    case "edit_file": {
      const p = str(args, "path");
      if (p !== undefined && !isConfigPath(p, cfg.workspace)) return undefined;
      return {
        kind: "config",
        target: "*",
        action: `change ${p === undefined ? "a workspace file" : nameOf(p)}, which configures agents`,
        payload: JSON.stringify(args, null, 2),
      };
    }
    case "delegate":
    case "dispatch": {
      const action = str(args, "action");
      if (action === "status" || action === "cancel" || action === "list") return undefined;
      const agent = str(args, "agent");
      if (!env.agentHasSinks(agent)) return undefined;
      return {
        kind: "delegate",
        target: agent ?? "*",
        action: `hand a task to agent ${agent === undefined ? "(chosen by capability)" : nameOf(agent)}, which can send or change things`,
        payload: args.message !== undefined ? whole(args.message) : JSON.stringify(args, null, 2),
      };
    }
    default: {
      if (server === undefined || mcpTrusted(cfg, server)) return undefined;
      return {
        kind: "mcp",
        target: server,
        action: `call ${nameOf(name)} of the untrusted MCP server ${nameOf(server)}`,
        payload: JSON.stringify(args, null, 2),
      };
    }
  }
}
