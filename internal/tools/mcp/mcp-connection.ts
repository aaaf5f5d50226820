/**
 * One MCP server connection (stdio or streamable HTTP) with reconnect-on-failure.
 *
 * Invariants:
 * - a failure to start, a failed tool listing or a crash never throws out of this class: it is logged,
 *   the state becomes `backoff`, and a reconnect is scheduled on the clock with exponential backoff
 *   (1s, 2s, 4s... capped at 60s; reset after a successful connect);
 * - while reconnecting the server's tools stay registered and answer with a clear "not connected"
 *   error, so the model's tool list does not flicker; `stop()` unregisters them;
 * - the SDK is imported lazily, only when a server is configured.
 *
 * Over 300 lines on purpose: one connection's lifecycle (connect, list, call, reconnect with
 * backoff) reads best in one place.
 */
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type { Clock, TimerHandle } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import { ToolError, type Tool, type ToolResult } from "../tool.js";
import { callToolWithProgress, DEFAULT_MCP_CALL_LIMITS, type McpCallLimits } from "./mcp-call.js";
import { GroupStdioTransport } from "./mcp-stdio-transport.js";

/** Config of one server (`mcp.servers.<name>`). */
export interface McpServerConfig {
  command?: string | undefined;
  args: string[];
  env: Record<string, string>;
  url?: string | undefined;
  headers: Record<string, string>;
  enabled: boolean;
  sandbox?: boolean;
  sandbox_network?: boolean;
  /** The roots as configured (`workspace` or paths); absent: no roots capability. */
  roots?: string[] | undefined;
}

export interface McpServerHealth {
  state: "connecting" | "connected" | "backoff" | "stopped";
  tools: number;
  restarts: number;
  lastError?: string;
  nextRetryAt?: number;
  pid?: number;
}

export interface McpConnectionDeps {
  clock: Clock;
  logger: Logger;
  register: (tool: Tool) => () => void;
  /** A stdio server's working directory: its own folder outside the workspace (mcp-manager.ts). */
  cwd?: string;
  /**
   * The folders declared as roots (`roots/list`), resolved. Undefined: the client declares no roots
   * capability, so a server such as server-filesystem keeps the folders its arguments name.
   */
  roots?: readonly string[];
  /** Wraps a stdio server's command line in the sandbox (for `sandbox: true`). */
  sandbox?: (
    argv: string[],
    network: boolean,
  ) => Promise<{ file: string; args: string[]; env: NodeJS.ProcessEnv }>;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Call limits (silence and total); default {@link DEFAULT_MCP_CALL_LIMITS}. */
  callLimits?: McpCallLimits;
}

type SdkClient = import("@modelcontextprotocol/sdk/client/index.js").Client;
type SdkTransport = import("@modelcontextprotocol/sdk/shared/transport.js").Transport;

const argsSchema = z.record(z.string(), z.unknown());

/** `mcp__<server>__<tool>` with characters outside [a-zA-Z0-9_-] replaced, at most 64 chars. */
export function mcpToolName(server: string, tool: string): string {
  const clean = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, "_");
  return `mcp__${clean(server)}__${clean(tool)}`.slice(0, 64);
}

/** Converts an MCP call result to text for the model. */
export function mcpResultToText(r: {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}): ToolResult {
  const parts: string[] = [];
  const images: { mime: string; data: string }[] = [];
  const content = Array.isArray(r.content) ? (r.content as Record<string, unknown>[]) : [];
  for (const c of content) {
    if (c.type === "text" && typeof c.text === "string") parts.push(c.text);
    else if (c.type === "image" && typeof c.data === "string" && typeof c.mimeType === "string") {
      images.push({ mime: c.mimeType, data: c.data });
      parts.push(`[image ${images.length}: ${c.mimeType}]`);
    } else if (c.type === "image" || c.type === "audio")
      parts.push(`[${String(c.type)}: ${String(c.mimeType ?? "")}]`);
    else if (c.type === "resource") {
      const res = (c.resource ?? {}) as Record<string, unknown>;
      parts.push(typeof res.text === "string" ? res.text : `[resource ${String(res.uri ?? "")}]`);
    } else if (c.type === "resource_link") parts.push(`[resource ${String(c.uri ?? "")}]`);
  }
  if (parts.length === 0 && r.structuredContent !== undefined)
    parts.push(JSON.stringify(r.structuredContent));
  return {
    content: parts.join("\n") || "(no content)",
    isError: r.isError === true,
    ...(images.length > 0 ? { images } : {}),
  };
}

/**
 * True for failures of the connection itself (unreachable, HTTP error, unknown session, closed), false
 * for the server's own JSON-RPC errors (bad arguments, timeouts), which leave the connection usable.
 */
async function isConnectionFailure(err: unknown): Promise<boolean> {
  const { McpError, ErrorCode } = await import("@modelcontextprotocol/sdk/types.js");
  if (err instanceof McpError) return err.code === (ErrorCode.ConnectionClosed as number);
  return err instanceof Error;
}

export class McpConnection {
  private client: SdkClient | undefined;
  private transport: SdkTransport | undefined;
  /** The transport of the attempt in progress, from its spawn on: `stop()` closes it mid-handshake. */
  private starting: SdkTransport | undefined;
  private unregister: (() => void)[] = [];
  private timer: TimerHandle | undefined;
  private attempts = 0;
  /** The last lines the server printed on stderr (this attempt): part of a start failure's reason. */
  private stderrTail: string[] = [];
  private stopped = false;
  private generation = 0;
  private h: McpServerHealth = { state: "stopped", tools: 0, restarts: 0 };

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private deps: McpConnectionDeps,
  ) {}

  health(): McpServerHealth {
    return { ...this.h };
  }

  /** Starts connecting in the background; resolves after the first attempt (success or not). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const gen = ++this.generation;
    this.h.state = "connecting";
    delete this.h.nextRetryAt;
    try {
      const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
      const { ListRootsRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
      // Roots is the one client capability Familiar may declare, and only the folders the owner
      // configured for this server: a declared root replaces server-filesystem's own folders, so
      // declaring one unasked would take the owner's choice away (issue 46 item 2). Sampling and
      // elicitation are never declared (there is no one to ask mid-call, and a server must not
      // spend the owner's model budget on its own), so servers do not count on them.
      const roots = this.deps.roots;
      const client = new Client(
        { name: "familiar", version: "0.1.0" },
        { capabilities: roots ? { roots: { listChanged: true } } : {} },
      );
      if (roots)
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: roots.map((r) => ({ uri: pathToFileURL(r).href, name: r })),
        }));
      this.stderrTail = [];
      const transport = await this.makeTransport();
      this.starting = transport;
      client.onerror = (err) =>
        this.deps.logger.debug({ server: this.name, err: err.message }, "mcp transport error");
      await client.connect(transport);
      this.starting = undefined;
      // Set after connecting: a failed handshake closes the client too, and its real error (e.g. an
      // HTTP 401) must be what the health shows, not "connection closed".
      client.onclose = () => this.onClosed(gen, "connection closed");
      if (gen !== this.generation || this.stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = client;
      this.transport = transport;
      await this.refreshTools();
      const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        this.refreshTools().catch((err: unknown) =>
          this.deps.logger.warn(
            { server: this.name, err: (err as Error).message },
            "mcp tool refresh failed",
          ),
        );
      });
      this.attempts = 0;
      this.h.state = "connected";
      delete this.h.lastError;
      const pid = (transport as { pid?: number | null }).pid;
      if (typeof pid === "number") this.h.pid = pid;
      else delete this.h.pid;
      this.deps.logger.info({ server: this.name, tools: this.h.tools }, "mcp server connected");
    } catch (err) {
      if (gen !== this.generation) return;
      // A failed handshake may leave the process running (it never answered): end its group.
      const failed = this.starting;
      this.starting = undefined;
      // The process's own words (bwrap: "execvp ...: No such file or directory") explain more than
      // the SDK's "Connection closed"; give them a moment to arrive.
      await new Promise((r) => setTimeout(r, 50));
      void failed?.close().catch(() => undefined);
      if (gen !== this.generation) return;
      this.onClosed(gen, this.startFailure((err as Error).message ?? String(err)));
    }
  }

  /** Why a start failed, with what the server printed and, for a sandboxed one, the fix. */
  private startFailure(why: string): string {
    const said = this.stderrTail.join(" | ").slice(-600);
    let out = said ? `${why}; the server said: ${said}` : why;
    if (this.config.sandbox && this.config.command)
      out +=
        `; it runs in the sandbox (sandbox: true), where only the workspace, system folders and ` +
        `tools.exec.sandbox.ro/rw are visible: make its command (${this.config.command}) and what it ` +
        `loads visible by adding their folder to tools.exec.sandbox.ro, or set ` +
        `mcp.servers.${this.name}.sandbox: false (the server restarts when either changes)`;
    return out;
  }

  private async makeTransport(): Promise<SdkTransport> {
    const c = this.config;
    if (c.url) {
      const { StreamableHTTPClientTransport } =
        await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
    }
    const { getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    let command = c.command ?? "";
    let args = c.args;
    let env: Record<string, string> = { ...getDefaultEnvironment(), ...c.env };
    if (c.sandbox) {
      if (!this.deps.sandbox) throw new Error("sandbox: true but no sandbox is wired in");
      const inv = await this.deps.sandbox([command, ...args], c.sandbox_network ?? true);
      command = inv.file;
      args = inv.args;
      // The scrubbed sandbox environment plus what the owner configured for this server.
      env = { ...(inv.env as Record<string, string>), ...c.env };
    }
    // Our own transport, not the SDK's: the server gets a process group that stop() can end, also
    // while it is still starting (mcp-stdio-transport.ts).
    const t = await GroupStdioTransport.create({
      command,
      args,
      env,
      ...(this.deps.cwd ? { cwd: this.deps.cwd } : {}),
    });
    t.stderr.on("data", (d: Buffer) => {
      const line = d.toString("utf8").trim();
      if (!line) return;
      this.stderrTail.push(line.slice(0, 300));
      if (this.stderrTail.length > 5) this.stderrTail.shift();
      this.deps.logger.debug({ server: this.name, stderr: line.slice(0, 500) }, "mcp server stderr");
    });
    return t;
  }

  private onClosed(gen: number, why: string): void {
    if (gen !== this.generation || this.stopped) return;
    this.generation++; // ignore further events of this attempt
    const old = this.client;
    this.client = undefined;
    this.transport = undefined;
    old?.close().catch(() => undefined);
    const delay = Math.min(
      (this.deps.baseBackoffMs ?? 1000) * 2 ** this.attempts,
      this.deps.maxBackoffMs ?? 60_000,
    );
    this.attempts++;
    this.h.state = "backoff";
    this.h.lastError = why;
    this.h.nextRetryAt = this.deps.clock.now() + delay;
    delete this.h.pid;
    this.deps.logger.warn(
      { server: this.name, err: why, retryInMs: delay },
      "mcp server unavailable; will retry",
    );
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      this.h.restarts++;
      void this.connect();
    }, delay);
    this.timer.unref?.();
  }

  private async refreshTools(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const listed: { name: string; description?: string; inputSchema: Record<string, unknown> }[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      listed.push(...(page.tools as typeof listed));
      cursor = page.nextCursor;
    } while (cursor);
    for (const u of this.unregister) u();
    this.unregister = listed.map((t) => this.deps.register(this.wrap(t)));
    this.h.tools = listed.length;
  }

  private wrap(t: { name: string; description?: string; inputSchema: Record<string, unknown> }): Tool {
    const remoteName = t.name;
    const parameters = { type: "object", properties: {}, ...t.inputSchema };
    return {
      name: mcpToolName(this.name, t.name),
      group: "mcp",
      description: `[${this.name}] ${(t.description ?? remoteName).slice(0, 1000)}`,
      schema: argsSchema,
      parameters,
      execute: async (args, signal) => {
        const client = this.client;
        if (!client)
          throw new ToolError(
            "MCP_UNAVAILABLE",
            `MCP server "${this.name}" is not connected (${this.h.lastError ?? this.h.state}); try again later`,
          );
        const gen = this.generation;
        let r: unknown;
        try {
          r = await callToolWithProgress(
            client,
            { server: this.name, tool: remoteName, args: args as Record<string, unknown> },
            signal,
            this.deps.clock,
            this.deps.callLimits ?? DEFAULT_MCP_CALL_LIMITS,
            (p) =>
              this.deps.logger.debug(
                { server: this.name, tool: remoteName, progress: p.progress, total: p.total },
                "mcp progress",
              ),
          );
        } catch (err) {
          // A timeout (ours) or the caller's abort leaves the connection as it was.
          if (signal.aborted || err instanceof ToolError || !(await isConnectionFailure(err))) throw err;
          // An HTTP server that died (or restarted and forgot our session) sends no close event:
          // the failed call is how we learn it, so reconnect with backoff as for a crashed process.
          const why = (err as Error).message ?? String(err);
          this.onClosed(gen, why);
          throw new ToolError(
            "MCP_UNAVAILABLE",
            `MCP server "${this.name}" is not reachable (${why}); try again later`,
          );
        }
        return mcpResultToText(r as { content?: unknown; structuredContent?: unknown; isError?: unknown });
      },
    };
  }

  /** Disconnects, cancels retries and unregisters the tools. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.generation++;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
    for (const u of this.unregister) u();
    this.unregister = [];
    const c = this.client;
    const starting = this.starting;
    this.client = undefined;
    this.transport = undefined;
    this.starting = undefined;
    this.h = { state: "stopped", tools: 0, restarts: this.h.restarts };
    // A server still in its handshake has no client yet: its transport is closed directly.
    await Promise.all([c?.close().catch(() => undefined), starting?.close().catch(() => undefined)]);
  }
}
