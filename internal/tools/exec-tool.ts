/**
 * The `exec` tool: runs a shell command on the desk (`<workspace>/desk/`) under `tools.exec` policy.
 *
 * Two modes, decided per call (and logged at start-up by the tools service):
 * - sandboxed (`tools.exec.sandbox.enabled` and a working bwrap): every command runs under bubblewrap
 *   (sandbox/bwrap-args.ts) and runs WITHOUT asking: the kernel is the boundary, so the assistant can
 *   use the shell freely on its desk, the one place it can write (the rest of the workspace is
 *   read-only to it). What it leaves there that is not plain data is held and asked about once
 *   (desk-guard.ts). `security: deny` and `ask: always` still apply;
 * - unsandboxed: every command asks the owner first unless `security: full`; the allow list is only a
 *   convenience for commands that take no path and run no program, and refuses what it cannot judge.
 * A command needing approval that is denied or expires is an error result, never a hang.
 */
import { realpath } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { evaluateExec, type ExecVerdict } from "./exec-policy.js";
import { escapesBySymlink } from "./exec-escape.js";
import { runShell, type RunOutcome } from "./run-process.js";
import { sandboxInvocation, sandboxSpec } from "./sandbox/sandbox-command.js";
import { PROXY_MOUNT, PROXY_WRAPPER, proxyEnv, startEgressProxy } from "./egress/egress-proxy.js";
import { probeSandbox, type SandboxStatus } from "./sandbox/sandbox-probe.js";
import { CGROUP_ENTER_FAILED, createCommandCgroup, inCgroup, probeCgroup } from "./sandbox/sandbox-cgroup.js";
import { workspaceUsage } from "./sandbox/workspace-usage.js";
import { deskAllowed, settleDesk, watchDesk } from "./desk-guard.js";
import { DESK, ensureDesk } from "../workspace/zones.js";
import { ensureWorkspaceDirSync } from "../workspace/workspace-door.js";
import { defineTool, ToolError, type Tool, type ToolContext, type ToolResult } from "./tool.js";

export { commandEnv, runShell } from "./run-process.js";

const schema = z
  .object({
    command: z.string().min(1).describe("sh -c command, run on the desk (workspace folder desk/)"),
    timeout_s: z.number().int().min(1).optional(),
  })
  .strict();

/** Formats a run as the model sees it. */
function formatRun(r: RunOutcome, timeoutS: number): ToolResult {
  if (r.reason === "timeout")
    return {
      isError: true,
      content: `command timed out after ${timeoutS}s and was killed\n${r.output}`.trimEnd(),
    };
  if (r.reason === "aborted") return { isError: true, content: `command aborted\n${r.output}`.trimEnd() };
  const status = r.code !== null ? `exit code ${r.code}` : `killed by ${r.signal ?? "a signal"}`;
  return { content: `${status}\n${r.output || "(no output)"}`, isError: r.code !== 0 };
}

/** The sandbox to use for this call, or undefined when commands run unsandboxed. */
export async function liveSandbox(cfg: Config): Promise<SandboxStatus | undefined> {
  if (!cfg.tools.exec.sandbox.enabled) return undefined;
  const status = await probeSandbox();
  return status.ok ? status : undefined;
}

/** The verdict outside the sandbox: the hardened allow list, then symlink escapes. */
async function unsandboxedVerdict(command: string, cfg: Config["tools"]["exec"], cwd: string) {
  let verdict: ExecVerdict = evaluateExec(command, cfg);
  // The allow list covers the workspace only: an argument that is a symlink out of it (`cat
  // link/secret`) makes the command a miss, like an absolute path does.
  if (verdict.action === "allow" && cfg.security === "allowlist" && (await escapesBySymlink(command, cwd))) {
    const reason = "an argument resolves outside the workspace through a symlink";
    verdict = cfg.ask === "off" ? { action: "deny", reason } : { action: "ask", reason };
  }
  return verdict;
}

async function askOwner(ctx: ToolContext, command: string, reason: string, signal: AbortSignal) {
  if (!(ctx.approvalTarget ?? ctx.replyTarget))
    throw new ToolError(
      "EXEC_NEEDS_APPROVAL",
      `refused: ${reason}, and this session has no channel to ask the owner on`,
    );
  const decision = await ctx.requestApproval({ kind: "exec", summary: `$ ${command}` });
  if (decision === "denied") throw new ToolError("EXEC_DENIED", "the owner denied this command");
  if (decision === "expired")
    throw new ToolError("EXEC_APPROVAL_EXPIRED", "the approval request expired without an answer; not run");
  if (signal.aborted) throw new ToolError("EXEC_ABORTED", "aborted");
}

const MB = 1024 * 1024;

/** The most labelled paths a clean session's command can be kept from seeing (one mount each). */
const MAX_MASKS = 2000;

/**
 * What a clean session's command must not see (labelled data, the inbox): absolute paths. Refused
 * when there are too many to mask: the command would otherwise read tainted data unseen.
 */
function cleanMasks(root: string, ctx: ToolContext): string[] {
  const rel = ctx.sandboxMasks?.() ?? [];
  if (rel.length > MAX_MASKS)
    throw new ToolError(
      "EXEC_TOO_MANY_LABELS",
      `refused: ${rel.length} files in the workspace were written by tainted conversations, too many to keep out of this clean session's command; read them with read_file, or have the owner clear them (familiar memory tainted)`,
    );
  // A shared chat's hidden entries come on top, taint or not: a tainted session sees labelled data,
  // never the owner's private files.
  return [...rel, ...(ctx.withheld?.hidden() ?? [])].map((p) => join(root, p));
}

/** The disk budget problem in words, or undefined when the workspace is within it (or none is set). */
function overBudget(cwd: string, budgetMb: number): string | undefined {
  if (budgetMb <= 0) return undefined;
  const u = workspaceUsage(cwd);
  if (u.bytes <= budgetMb * MB) return undefined;
  return `the workspace uses ${Math.ceil(u.bytes / MB)} MB${u.complete ? "" : " or more"}, over its budget of ${budgetMb} MB (tools.exec.sandbox.workspace_disk_mb)`;
}

/** Options of the exec tool. */
export interface ExecToolOptions {
  /** Daemon paths a sandboxed command must never see (the config file). */
  hide?: () => readonly string[];
}

/** Builds the exec tool. */
export function createExecTool(config: () => Config, opts: ExecToolOptions = {}): Tool<typeof schema> {
  return defineTool({
    name: "exec",
    group: "exec",
    description:
      "Run a shell command; returns exit code and output. It runs in desk/ (the workspace's desk, the only writable folder); the rest of the workspace and the system are read-only.",
    schema,
    async execute(args, signal, ctx) {
      const full = config();
      const cfg = full.tools.exec;
      const root = await realpath(resolve(ctx.workspace)).catch(() => resolve(ctx.workspace));
      // A shared chat's commands run in its own desk (ToolContext.withheld.desk), made here through
      // the door; everyone else's in the desk.
      const desk = ensureDesk(root).desk;
      const ownDesk = ctx.withheld?.desk;
      if (ownDesk) ensureWorkspaceDirSync(root, ownDesk);
      const cwd = ownDesk ? join(root, ownDesk) : desk;
      const sandbox = await liveSandbox(full);
      let verdict: ExecVerdict;
      if (cfg.security === "deny")
        verdict = { action: "deny", reason: "exec is disabled (tools.exec.security: deny)" };
      else if (cfg.ask === "always")
        verdict = { action: "ask", reason: "every command needs approval (tools.exec.ask: always)" };
      else if (sandbox) verdict = { action: "allow" };
      else verdict = await unsandboxedVerdict(args.command, cfg, cwd);
      if (verdict.action === "deny") throw new ToolError("EXEC_DENIED", `refused: ${verdict.reason}`);
      // Fails closed: only the sandbox can keep a shared chat's command from the owner's private files.
      if (ctx.withheld && !sandbox)
        throw new ToolError(
          "EXEC_PRIVATE_NEEDS_SANDBOX",
          "refused: this chat is not the owner's alone, and without the sandbox (bubblewrap) a command would see the owner's private files; commands run here only in the sandbox",
        );
      if (verdict.action === "ask") await askOwner(ctx, args.command, verdict.reason, signal);
      const timeoutS = Math.min(args.timeout_s ?? cfg.timeout_s, cfg.timeout_s);
      const budget = sandbox ? overBudget(root, cfg.sandbox.workspace_disk_mb) : undefined;
      if (budget)
        throw new ToolError("EXEC_DISK_BUDGET", `refused: ${budget}; delete files before running commands`);
      // The desk fails closed: what the command leaves that is not plain data is held afterwards.
      const dataDir = await realpath(resolve(full.data_dir)).catch(() => resolve(full.data_dir));
      const watch = sandbox ? watchDesk(cwd, deskAllowed(full)) : undefined;
      // With network on, it leaves through the daemon's egress proxy (containment.egress.proxy).
      const proxy =
        sandbox && cfg.sandbox.network && full.containment.egress.proxy
          ? await startEgressProxy({
              gate: (host, port) =>
                ctx.egress
                  ? ctx.egress(new URL(`${port === 80 ? "http" : "https"}://${host}:${port}/`))
                  : Promise.resolve(),
              allowPrivate: full.tools.web.allow_private,
              allowHosts: full.tools.web.allow_hosts,
            })
          : undefined;
      const cgroup = sandbox ? createCommandCgroup(probeCgroup(), cfg.sandbox.total_memory_mb) : undefined;
      let r: RunOutcome;
      let limited: boolean;
      try {
        const spec = sandbox
          ? sandboxSpec(full, sandbox, {
              workspace: root,
              network: cfg.sandbox.network,
              hide: opts.hide?.() ?? [],
              cpuS: timeoutS,
              masks: cleanMasks(root, ctx),
              desk: cwd,
            })
          : undefined;
        const node = proxy ? await realpath(process.execPath) : "";
        let invocation =
          sandbox && spec
            ? sandboxInvocation(
                sandbox,
                proxy ? { ...spec, proxy: { dir: proxy.dir, mount: PROXY_MOUNT, node } } : spec,
                proxy
                  ? ["/bin/sh", "-c", PROXY_WRAPPER, "familiar-exec", args.command]
                  : ["/bin/sh", "-c", args.command],
                { passFds: true },
              )
            : undefined;
        if (invocation && proxy) Object.assign(invocation.env, proxyEnv(node));
        if (invocation && cgroup) invocation = inCgroup(invocation, cgroup);
        r = await runShell(args.command, {
          cwd,
          timeoutMs: timeoutS * 1000,
          maxOutput: cfg.max_output_chars,
          signal,
          ...(invocation ? { invocation } : {}),
        });
        limited = cgroup?.hitLimit() ?? false;
      } finally {
        cgroup?.remove();
        await proxy?.close();
      }
      if (cgroup && r.code === CGROUP_ENTER_FAILED && !r.output.trim())
        throw new ToolError("EXEC_CGROUP", "the command could not be placed in its memory cgroup; not run");
      const result = formatRun(r, timeoutS);
      if (limited)
        result.content += `\n[the command's processes together reached their memory limit of ${cfg.sandbox.total_memory_mb} MB (tools.exec.sandbox.total_memory_mb), /tmp included]`;
      if (watch) {
        const settled = await settleDesk(watch, dataDir, ctx);
        if (settled.outcome) result.content += settled.outcome.note;
        // What the command wrote on the desk carries the session's taint (containment labels it).
        if (settled.changed.length)
          result.writes = { files: settled.changed.map((f) => `${ownDesk ?? DESK}/${f}`) };
      }
      const after = sandbox ? overBudget(root, cfg.sandbox.workspace_disk_mb) : undefined;
      if (after) return { isError: true, content: `${result.content}\n[${after}: delete files now]` };
      return result;
    },
  });
}
