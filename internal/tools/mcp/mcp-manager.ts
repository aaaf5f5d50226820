/**
 * MCP manager: keeps one {@link McpConnection} per enabled `mcp.servers.<name>` and follows config
 * reloads live (new servers start, changed ones restart, removed or disabled ones stop at once). A
 * server that fails never takes the daemon down; its state shows in `health()`.
 *
 * The owner's programs take nothing from the workspace (issue 43): a stdio server starts in a folder
 * of its own, `<data_dir>/mcp/<server>/` (0700, made here), never in the workspace, so `npx` and its
 * kind resolve packages there and not from a `package.json` or `node_modules/` the model planted.
 */
import { chmod, mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../../config/schema.js";
import { programRoot, sandboxInvocation, sandboxSpec, type Invocation } from "../sandbox/sandbox-command.js";
import { isAbsolute } from "node:path";
import { expandHome } from "../sandbox/sandbox-command.js";
import { probeSandbox } from "../sandbox/sandbox-probe.js";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import type { Tool } from "../tool.js";
import { McpConnection, type McpServerConfig, type McpServerHealth } from "./mcp-connection.js";

export interface McpManagerDeps {
  config: () => Config;
  clock: Clock;
  logger: Logger;
  register: (tool: Tool) => () => void;
  baseBackoffMs?: number;
  /** Daemon paths a sandboxed server must never see (the config file). */
  hide?: readonly string[];
}

export class McpManager {
  private conns = new Map<string, { conn: McpConnection; key: string }>();

  constructor(private deps: McpManagerDeps) {}

  /** Brings running servers in line with config. Connect attempts run in the background. */
  async sync(): Promise<void> {
    const cfg = this.deps.config();
    const wanted = new Map<string, McpServerConfig>();
    for (const [name, s] of Object.entries(cfg.mcp.servers)) if (s.enabled) wanted.set(name, s);
    // What a server's start depends on: its own config, the workspace (its root, its cwd) and, in
    // the sandbox, the grants. A change restarts it at once, also one waiting for its next retry.
    const keyOf = (s: McpServerConfig): string =>
      JSON.stringify([s, cfg.workspace, cfg.data_dir, s.sandbox ? cfg.tools.exec.sandbox : null]);
    const stops: Promise<void>[] = [];
    for (const [name, { conn, key }] of this.conns) {
      const next = wanted.get(name);
      if (!next || keyOf(next) !== key) {
        this.deps.logger.info(
          { server: name },
          next ? "mcp server config changed; restarting" : "mcp server removed",
        );
        this.conns.delete(name);
        stops.push(conn.stop());
      }
    }
    await Promise.all(stops);
    for (const [name, server] of wanted) {
      if (this.conns.has(name)) continue;
      const cwd = server.command ? await this.homeOf(name) : undefined;
      // Checked again after the await: a sync that ran meanwhile may have started it.
      if (this.conns.has(name)) continue;
      const roots = server.roots?.map((r) => (r === "workspace" ? cfg.workspace : expandHome(r)));
      const conn = new McpConnection(name, server, {
        clock: this.deps.clock,
        logger: this.deps.logger,
        register: this.deps.register,
        ...(cwd ? { cwd } : {}),
        ...(roots ? { roots } : {}),
        sandbox: (argv, network) => this.sandboxFor(argv, network),
        ...(this.deps.baseBackoffMs !== undefined ? { baseBackoffMs: this.deps.baseBackoffMs } : {}),
      });
      this.conns.set(name, { conn, key: keyOf(server) });
      void conn.start();
    }
  }

  /**
   * `<data_dir>/mcp/<server>/`, made 0700, with a `package.json` of its own: npm looks for a project
   * from the working directory upwards, and this one ends the search here, so a planted manifest in
   * a folder above (a data dir kept inside the workspace) is never the project `npx` runs from.
   */
  private async homeOf(name: string): Promise<string> {
    const dir = join(this.deps.config().data_dir, "mcp", name.replace(/[^a-zA-Z0-9_-]/g, "_"));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    const manifest = { name: "familiar-mcp-server-home", private: true };
    await writeFile(join(dir, "package.json"), `${JSON.stringify(manifest)}\n`, { mode: 0o600 });
    return dir;
  }

  /** The bwrap invocation for a server with `sandbox: true`; refuses when bubblewrap is not usable. */
  private async sandboxFor(argv: string[], network: boolean): Promise<Invocation> {
    const cfg = this.deps.config();
    const status = await probeSandbox();
    if (!status.ok)
      throw new Error(`sandbox: true but the sandbox is not available: ${status.problem ?? ""}`);
    const workspace = await realpath(cfg.workspace).catch(() => cfg.workspace);
    // The server's program, when it lies outside the system folders (a Node or Python install of
    // its own), is shown read-only; the owner's home and the data dir never are (programRoot).
    const program = argv[0] && isAbsolute(argv[0]) ? programRoot(argv[0], cfg.data_dir) : undefined;
    const spec = sandboxSpec(cfg, status, {
      workspace,
      network,
      hide: this.deps.hide ?? [],
      cpuS: 0,
      ...(program ? { extraRo: [program] } : {}),
    });
    return sandboxInvocation(status, spec, argv);
  }

  /** Health per server. */
  health(): Record<string, McpServerHealth> {
    const out: Record<string, McpServerHealth> = {};
    for (const [name, { conn }] of this.conns) out[name] = conn.health();
    return out;
  }

  async stop(): Promise<void> {
    const all = [...this.conns.values()].map(({ conn }) => conn.stop());
    this.conns.clear();
    await Promise.all(all);
  }
}
