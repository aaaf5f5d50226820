/**
 * The tool registry: every tool the daemon knows (built-ins plus tools other modules register: cron,
 * delegate, dispatch, MCP...) and per-agent {@link ToolSet}s filtered by `agents.<id>.tools`.
 *
 * Invariants:
 * - `ToolSet.execute` never throws and never hangs past its signal: unknown or forbidden tools,
 *   malformed JSON, schema violations (naming the field), thrown errors and aborts become
 *   `{ isError: true }` results;
 * - every result is capped at `tools.max_result_chars` with a note saying how much was cut;
 * - JSON-schema specs are computed once per tool object (zod's export is not free) and reused.
 */
import { WorkspaceError } from "../workspace/workspace-error.js";
import { z } from "zod";
import { leanJsonSchema } from "./lean-schema.js";
import { LOAD_TOOLS, loadToolsSpec, runLoadTools } from "./load-tools.js";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { ToolCall, ToolSpec } from "../models/types.js";
import { isToolAllowed, type ToolPolicy } from "./policy.js";
import { ToolError, type Tool, type ToolContext, type ToolResult, type ToolSet } from "./tool.js";

export interface ToolRegistryOptions {
  config: () => Config;
  logger?: Logger;
}

const specCache = new WeakMap<Tool, ToolSpec>();

/** The JSON-schema spec of a tool (cached per tool object). */
export function toolSpec(tool: Tool): ToolSpec {
  let spec = specCache.get(tool);
  if (!spec) {
    let parameters = tool.parameters;
    if (!parameters) parameters = leanJsonSchema(tool.schema);
    spec = { name: tool.name, description: tool.description, parameters };
    specCache.set(tool, spec);
  }
  return spec;
}

function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

/** Formats zod issues as `invalid arguments: path: expected string, got number; ...`. */
export function formatArgIssues(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, 5).map((i) => {
    const path = i.path.length ? i.path.map(String).join(".") : "(arguments)";
    if (i.code === "invalid_type") return `${path}: expected ${i.expected}, got ${describeValue(i.input)}`;
    if (i.code === "unrecognized_keys") return `${path}: unknown field(s) ${i.keys.join(", ")}`;
    return `${path}: ${i.message}`;
  });
  return `invalid arguments: ${parts.join("; ")}`;
}

/** Caps a result's content, appending a note that says how much was cut. */
export function capResult(r: ToolResult, max: number): ToolResult {
  if (r.content.length <= max) return r;
  const note = `\n[truncated: showing ${max} of ${r.content.length} characters]`;
  return { ...r, content: r.content.slice(0, Math.max(0, max - note.length)) + note };
}

export class ToolRegistry {
  private tools = new Map<string, Tool>();
  private version = 0;
  private cache = new Map<
    string,
    { version: number; config: Config; policy: unknown; ceiling?: unknown; set: ToolSet }
  >();

  constructor(private opts: ToolRegistryOptions) {}

  /**
   * Adds a tool. A tool with the same name is replaced (later registration wins, logged), so a
   * reconnecting MCP server or a reloaded module can re-register. Returns an unregister function that
   * only removes this very tool object.
   */
  register(tool: Tool): () => void {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name))
      throw new ToolError("TOOL_BAD_NAME", `tool name "${tool.name}" must match [a-zA-Z0-9_-]{1,64}`);
    const prev = this.tools.get(tool.name);
    if (prev && prev !== tool) this.opts.logger?.debug({ tool: tool.name }, "tool replaced");
    this.tools.set(tool.name, tool as Tool);
    this.version++;
    return () => {
      if (this.tools.get(tool.name) === tool) this.unregister(tool.name);
    };
  }

  unregister(name: string): boolean {
    const had = this.tools.delete(name);
    if (had) this.version++;
    return had;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  list(): Tool[] {
    return [...this.tools.values()];
  }

  /**
   * The tool set of one agent. `policy` overrides `agents.<agentId>.tools` (pass the AgentDef's
   * `tools` for agents defined outside config.yaml). Cached until the registry or config changes.
   */
  forAgent(agentId: string, policy?: ToolPolicy, ceiling?: ToolPolicy): ToolSet {
    const config = this.opts.config();
    const effective =
      policy ??
      ((config.agents as Record<string, unknown>)[agentId] as { tools?: ToolPolicy } | undefined)?.tools;
    const hit = this.cache.get(agentId);
    if (
      hit &&
      hit.version === this.version &&
      hit.config === config &&
      hit.policy === effective &&
      hit.ceiling === ceiling
    )
      return hit.set;
    // The ceiling (a workspace agent's most tools, set only in config.yaml) caps whatever the policy allows.
    const allowed = new Map<string, Tool>();
    for (const t of this.tools.values())
      if (
        t.name !== LOAD_TOOLS &&
        isToolAllowed(effective, t) &&
        (ceiling === undefined || isToolAllowed(ceiling, t))
      )
        allowed.set(t.name, t);
    const set = this.makeSet(allowed, new Set(config.tools.deferred));
    this.cache.set(agentId, { version: this.version, config, policy: effective, ceiling, set });
    return set;
  }

  private makeSet(allowed: Map<string, Tool>, deferredNames: ReadonlySet<string>): ToolSet {
    const eager: Tool[] = [];
    const deferred = new Map<string, Tool>();
    for (const t of allowed.values()) {
      if (deferredNames.has(t.name)) deferred.set(t.name, t);
      else eager.push(t);
    }
    const loader = loadToolsSpec([...deferred.values()]);
    const base = [...eager.map(toolSpec), ...(loader ? [loader] : [])];
    const names = [...allowed.keys()];
    // One spec list per distinct set of loaded tools (a turn loads one or two, rarely more).
    const withLoaded = new Map<string, ToolSpec[]>();
    return {
      specs: (loaded) => {
        const extra = loaded ? [...deferred.values()].filter((t) => loaded.has(t.name)) : [];
        if (extra.length === 0) return base;
        const key = extra.map((t) => t.name).join(",");
        let specs = withLoaded.get(key);
        if (!specs) {
          const rest = loadToolsSpec([...deferred.values()].filter((t) => !loaded?.has(t.name)));
          specs = [...eager.map(toolSpec), ...extra.map(toolSpec), ...(rest ? [rest] : [])];
          withLoaded.set(key, specs);
        }
        return specs;
      },
      names: () => names,
      execute: async (call, signal, ctx) => {
        const max = this.opts.config().tools.max_result_chars;
        if (call.name === LOAD_TOOLS && deferred.size > 0)
          return capResult(this.load(call, deferred, ctx), max);
        return capResult(await this.run(allowed, call, signal, ctx), max);
      },
    };
  }

  private load(call: ToolCall, deferred: ReadonlyMap<string, Tool>, ctx: ToolContext): ToolResult {
    let raw: unknown;
    try {
      raw = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
    } catch (err) {
      return { isError: true, content: `invalid arguments: not valid JSON (${(err as Error).message})` };
    }
    return runLoadTools(raw, deferred, toolSpec, ctx);
  }

  private async run(
    allowed: Map<string, Tool>,
    call: ToolCall,
    signal: AbortSignal,
    ctx: ToolContext,
  ): Promise<ToolResult> {
    const tool = allowed.get(call.name);
    if (!tool) {
      const exists = this.tools.has(call.name);
      return {
        isError: true,
        content: exists
          ? `tool "${call.name}" is not available to this agent`
          : `unknown tool "${call.name}"; available: ${[...allowed.keys()].join(", ") || "none"}`,
      };
    }
    let raw: unknown;
    try {
      raw = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
    } catch (err) {
      return { isError: true, content: `invalid arguments: not valid JSON (${(err as Error).message})` };
    }
    const parsed = tool.schema.safeParse(raw, { reportInput: true });
    if (!parsed.success) return { isError: true, content: formatArgIssues(parsed.error.issues) };
    if (signal.aborted) return { isError: true, content: "aborted before the tool ran" };
    let onAbort: (() => void) | undefined;
    // Races the tool against the signal so a tool that ignores its signal cannot hold the turn.
    const aborted = new Promise<ToolResult>((resolve) => {
      onAbort = () => resolve({ isError: true, content: "aborted" });
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const out = await Promise.race([
        tool.execute(parsed.data, signal, ctx).then((r) => (typeof r === "string" ? { content: r } : r)),
        aborted,
      ]);
      return out;
    } catch (err) {
      if (signal.aborted) return { isError: true, content: "aborted" };
      // ToolError messages are written for the model; anything else is unexpected and logged.
      // So are the workspace door's refusals (a planted link, a fifo): a clear tool error, not a crash.
      if (err instanceof ToolError || err instanceof WorkspaceError)
        return { isError: true, content: err.message };
      ctx.logger.warn({ tool: call.name, err: (err as Error).message }, "tool failed");
      return { isError: true, content: `error: ${(err as Error).message ?? String(err)}` };
    } finally {
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
  }
}
