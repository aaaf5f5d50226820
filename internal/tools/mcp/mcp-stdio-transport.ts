/**
 * The stdio transport for MCP servers: the SDK's wire format (one JSON-RPC message per line), with a
 * process lifecycle the SDK's own transport does not give (issue 46 item 5).
 *
 * Invariants:
 * - the server runs in a process group of its own (`detached`), so a launcher's children (`npx`
 *   starts `node`, `uvx` starts `python`) are reached by one signal to the group;
 * - `close()` works from the moment the process is spawned, also while the MCP handshake is still
 *   pending: a server that is still starting is never left behind (parent pid 1) when the daemon
 *   stops or a reload removes it;
 * - closing ends the server's stdin (the MCP way to ask it to leave), then signals the whole group:
 *   SIGTERM after a short grace, SIGKILL after a longer one, and SIGTERM to the group once the leader
 *   has exited, for children that outlived it. The graces are real time: they bound how long a
 *   process may take to exit, which no fake clock can speed up.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { PassThrough } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

type StdioModule = typeof import("@modelcontextprotocol/sdk/shared/stdio.js");

/** What starts one server. */
export interface StdioServerParams {
  command: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  /** The server's working directory (its own folder, never the workspace: see mcp-manager.ts). */
  cwd?: string;
  /** How long a server may take to leave after its stdin closed before SIGTERM (ms, default 500). */
  termGraceMs?: number;
  /** How long after SIGTERM before SIGKILL (ms, default 2000). */
  killGraceMs?: number;
}

/** Sends `signal` to the process group led by `pid`; a group already gone is not an error. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* ESRCH: the group is empty */
  }
}

/** A stdio MCP transport whose server lives in its own process group. */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, readable before `start()` so early words are not lost. */
  readonly stderr = new PassThrough();
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private closing = false;

  private constructor(
    private readonly params: StdioServerParams,
    private readonly wire: StdioModule,
    private readonly buffer: InstanceType<StdioModule["ReadBuffer"]>,
  ) {}

  /** Creates the transport (the SDK's line codec is loaded lazily, like the rest of the SDK). */
  static async create(params: StdioServerParams): Promise<GroupStdioTransport> {
    const wire = await import("@modelcontextprotocol/sdk/shared/stdio.js");
    return new GroupStdioTransport(params, wire, new wire.ReadBuffer());
  }

  /** The server's pid (the group's id), once spawned. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("the MCP stdio transport is already started");
    const p = this.params;
    return new Promise((resolve, reject) => {
      const child = spawn(p.command, [...p.args], {
        env: p.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        ...(p.cwd ? { cwd: p.cwd } : {}),
      });
      this.child = child;
      this.exited = new Promise((r) => {
        child.once("close", () => r());
        // A spawn that failed (ENOENT) may never close: nothing is left to wait for.
        child.once("error", () => {
          if (child.pid === undefined) r();
        });
      });
      child.once("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.once("spawn", () => resolve());
      child.once("close", () => {
        // Children the leader left behind (it may have exited on its own) go with it.
        if (child.pid) signalGroup(child.pid, "SIGTERM");
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("error", (err) => this.onerror?.(err));
      child.stderr?.pipe(this.stderr);
      child.stdout?.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let msg: JSONRPCMessage | null;
          try {
            msg = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error);
            continue;
          }
          if (msg === null) break;
          this.onmessage?.(msg);
        }
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin) return Promise.reject(new Error("not connected"));
    return new Promise((resolve) => {
      if (stdin.write(this.wire.serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Ends stdin, then signals the group (see the invariants); resolves when the leader is gone. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || this.closing) {
      await this.exited;
      return;
    }
    this.closing = true;
    const pid = child.pid;
    try {
      child.stdin?.end();
    } catch {
      /* already closed */
    }
    const exited = this.exited ?? Promise.resolve();
    const within = (ms: number): Promise<boolean> =>
      Promise.race([
        exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref()),
      ]);
    if (pid && !(await within(this.params.termGraceMs ?? 500))) {
      signalGroup(pid, "SIGTERM");
      if (!(await within(this.params.killGraceMs ?? 2000))) signalGroup(pid, "SIGKILL");
    }
    await exited;
    this.buffer.clear();
  }
}
