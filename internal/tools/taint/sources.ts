/**
 * Which tool results taint the session: text the owner did not write entering the model's context.
 * Inbound sources (documents, images, transcripts, non-owner senders, webhooks) are reported by the
 * doors with the message (`InboundMessage.taint`); this module covers what tools bring in.
 */
import type { Config } from "../../config/schema.js";
import type { TaintInput } from "../../core/taint.js";
import type { ToolResult } from "../tool.js";
import { mcpServerOf, mcpTrusted } from "./sinks.js";

function argsOf(raw: string): Record<string, unknown> {
  try {
    const v: unknown = raw.trim() === "" ? {} : JSON.parse(raw);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** True when a workspace-relative path lies under `inbox/` (files chats sent). */
export function isInboxPath(p: string, workspace: string): boolean {
  let r = p.replace(/\\/g, "/");
  if (r.startsWith(workspace + "/")) r = r.slice(workspace.length + 1);
  r = r.replace(/^(\.\/)+/, "").replace(/^\/+/, "");
  return r === "inbox" || r.startsWith("inbox/");
}

/** The taint a finished call brings in, if any. */
export function classifySource(
  name: string,
  rawArgs: string,
  result: ToolResult,
  config: Config,
): TaintInput | undefined {
  if (name === "web_fetch") {
    // A refusal (our guard, a bad URL) read nothing; an HTTP error page did (its head says so).
    if (result.isError && !/^\[\d{3} /.test(result.content)) return undefined;
    const url = argsOf(rawArgs).url;
    return { kind: "web_fetch", detail: typeof url === "string" ? url : "a web page" };
  }
  if (name === "read_file" || name === "list_dir") {
    const p = argsOf(rawArgs).path;
    if (name === "read_file" && typeof p === "string" && isInboxPath(p, config.workspace) && !result.isError)
      return { kind: "inbox_file", detail: p };
    return undefined;
  }
  if (name === "exec") {
    const sb = config.tools.exec.sandbox;
    if (!sb.enabled || !sb.network || result.content === "") return undefined;
    const cmd = argsOf(rawArgs).command;
    return { kind: "exec_network", detail: typeof cmd === "string" ? cmd.slice(0, 200) : "a command" };
  }
  const server = mcpServerOf(name);
  if (server !== undefined && !mcpTrusted(config, server)) return { kind: "mcp_tool", detail: name };
  return undefined;
}
