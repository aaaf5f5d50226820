/**
 * Deferred tools and the `load_tools` tool that brings them in (issue 38, lean prompts).
 *
 * Why: tool schemas were most of what a plain "hi" sent (9.5 of 10.5 KB), and every call pays for
 * them again. Tools a turn rarely needs (`tools.deferred`: cron, delegate, dispatch, send_message,
 * current_time by default) are listed by name and a few words in `load_tools`' description instead;
 * the model loads the ones it needs, and their full schemas go with the rest of the turn's calls.
 *
 * Invariants:
 * - deferring changes what is *described* to the model, never what it may *run*: a deferred tool the
 *   agent is allowed is still executed when called directly (a wrong argument gets the usual error
 *   naming the field), and a tool the agent is not allowed is never listed;
 * - with nothing deferred (or everything loaded) there is no `load_tools` spec at all.
 */
import type { ToolSpec } from "../models/types.js";
import type { Tool, ToolContext, ToolResult } from "./tool.js";

/** The name of the loader tool; reserved (a registered tool of that name is never offered). */
export const LOAD_TOOLS = "load_tools";

/** A few words about a tool for the loader's list: its hint, or its description's first clause. */
export function toolHint(tool: Tool): string {
  if (tool.hint) return tool.hint;
  const first = tool.description.split(/(?<=[.;:(])\s/)[0] ?? tool.description;
  return first.replace(/[.;:(]$/, "").slice(0, 80);
}

/** The `load_tools` spec listing `deferred` (name and hint each), or undefined when none is left. */
export function loadToolsSpec(deferred: readonly Tool[]): ToolSpec | undefined {
  if (deferred.length === 0) return undefined;
  const list = deferred.map((t) => `${t.name} (${toolHint(t)})`).join("; ");
  return {
    name: LOAD_TOOLS,
    description: `Load tools before use: ${list}.`,
    parameters: {
      type: "object",
      properties: { names: { type: "array", items: { type: "string", enum: deferred.map((t) => t.name) } } },
      required: ["names"],
    },
  };
}

/**
 * Runs a `load_tools` call: the named deferred tools are added to the turn (through
 * `ctx.loadTools`), or, where the caller cannot add them, their schemas are returned as text.
 */
export function runLoadTools(
  raw: unknown,
  deferred: ReadonlyMap<string, Tool>,
  spec: (tool: Tool) => ToolSpec,
  ctx: ToolContext,
): ToolResult {
  const names = (raw as { names?: unknown } | null)?.names;
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === "string"))
    return { isError: true, content: "invalid arguments: names: expected a non-empty array of tool names" };
  const unknown = names.filter((n) => !deferred.has(n));
  if (unknown.length > 0)
    return {
      isError: true,
      content: `cannot load ${unknown.join(", ")}; loadable: ${[...deferred.keys()].join(", ") || "none"}`,
    };
  const tools = names.map((n) => deferred.get(n) as Tool);
  if (ctx.loadTools) {
    ctx.loadTools(names);
    return { content: `loaded ${names.join(", ")}: call them now.` };
  }
  return { content: JSON.stringify(tools.map(spec)) };
}
