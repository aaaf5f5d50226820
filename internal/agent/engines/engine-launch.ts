/**
 * How a CLI engine (`claude-cli`, `cli`) starts its program: Invariant 3 of docs/security.md.
 *
 * - Environment: a minimal one, never the daemon's: locale, a PATH, a HOME, and what the CLI needs
 *   to reach its own API (for `claude-cli`: `ANTHROPIC_*`, `CLAUDE_*`, `DISABLE_*`, proxies and CA
 *   files), plus the names the owner lists in `pass_env` in config.yaml. Other providers' keys, bot
 *   tokens and `FAMILIAR_*` never reach it, whatever `pass_env` says for `FAMILIAR_*`.
 * - Sandbox: by default the program runs in the same bubblewrap sandbox as `exec` (on the desk, the
 *   only writable part of the workspace; the system read-only, the data dir, config and owner's home out of sight), with the
 *   host network shared (it must reach its API; an egress filter is not part of this), its
 *   program's folder bound read-only, and a HOME of its own in `<data_dir>/engines/<agent>/home`
 *   (read-write: the CLI keeps sessions there; never the owner's `~/.claude`, whose settings the
 *   owner's own unsandboxed CLI would run). `sandbox: false` on an agent in config.yaml runs it
 *   outside, with the owner's HOME; an agent defined anywhere else cannot opt out. Wanted but not
 *   available, the engine refuses to start, naming the reason and the opt-out.
 */
import { mkdirSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Config } from "../../config/schema.js";
import type { AgentDef } from "../agents.js";
import { SANDBOX_PATH } from "../../tools/sandbox/bwrap-args.js";
import {
  programRoot,
  sandboxInvocation,
  sandboxSpec,
  type Invocation,
} from "../../tools/sandbox/sandbox-command.js";
import type { SandboxStatus } from "../../tools/sandbox/sandbox-probe.js";

/** Starts `bin args` the way the agent's settings say. */
export type Launch = (bin: string, args: string[]) => Invocation;

/** The engine cannot start under the current settings (sandbox wanted, not available). */
export class EngineLaunchError extends Error {
  readonly code = "ENGINE_SANDBOX_UNAVAILABLE";
}

/** Locale and terminal variables every CLI gets. */
const BASE = ["LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM"];
/** What `claude-cli` needs to reach Anthropic's API (or the owner's proxy or gateway to it). */
const CLAUDE_PASS = /^(ANTHROPIC_|CLAUDE_|DISABLE_)/;
const NETWORK_PASS = new Set([
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
]);

/** The engine's environment (without PATH and HOME, which depend on the sandbox). */
export function engineEnv(
  base: NodeJS.ProcessEnv,
  kind: "claude-cli" | "cli",
  passEnv: readonly string[],
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const extra = new Set(passEnv);
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined || k.startsWith("FAMILIAR_")) continue;
    const wanted =
      BASE.includes(k) ||
      NETWORK_PASS.has(k) ||
      extra.has(k) ||
      (kind === "claude-cli" && CLAUDE_PASS.test(k));
    if (wanted) env[k] = v;
  }
  return env;
}

/** True when the agent's CLI runs in the sandbox: always, unless config.yaml itself says `sandbox: false`. */
export function wantsSandbox(agent: AgentDef): boolean {
  return !(agent.sandbox === false && agent.source === "config");
}

/** The launcher for one agent; `status` is the probed sandbox (undefined: not probed / not wanted). */
export function engineLauncher(
  cfg: Config,
  agent: AgentDef,
  kind: "claude-cli" | "cli",
  status: SandboxStatus | undefined,
  /** More paths the program reads (an MCP config outside the workspace). */
  extraRo: readonly string[] = [],
): Launch {
  // `pass_env` from a workspace agent file is ignored: only config.yaml grants secrets.
  const passEnv = agent.source === "config" ? agent.pass_env : [];
  const env = engineEnv(process.env, kind, passEnv);
  if (!wantsSandbox(agent))
    return (bin, args) => ({
      file: bin,
      args,
      env: {
        ...env,
        PATH: process.env.PATH ?? SANDBOX_PATH,
        ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
      },
    });
  return (bin, args) => {
    if (!status?.ok || !cfg.tools.exec.sandbox.enabled)
      throw new EngineLaunchError(
        `agent "${agent.id}" runs ${kind} in the sandbox, which is ${status?.ok ? "off (tools.exec.sandbox.enabled: false)" : `not available (${status?.problem ?? "not probed"})`}; ` +
          `to run it unsandboxed, set sandbox: false on agent ${agent.id} in config.yaml`,
      );
    const home = join(resolve(cfg.data_dir), "engines", agent.id, "home");
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const real = realpathSync(bin);
    // The program and the Node running the daemon (for `#!/usr/bin/env node` CLIs) are visible
    // read-only; nothing else of the owner's home is.
    const nodeBin = dirname(process.execPath);
    const workspace = realpathSync(resolve(cfg.workspace));
    const ro = [programRoot(real, cfg.data_dir) ?? real, nodeBin, ...extraRo];
    const spec = sandboxSpec(cfg, status, { workspace, network: true, hide: [], cpuS: 0, extraRo: ro });
    const inv = sandboxInvocation(
      status,
      {
        ...spec,
        rwAfterHide: [home],
        limits: { ...spec.limits, cpuS: 0 },
      },
      [real, ...args],
      { passFds: true },
    );
    return {
      ...inv,
      env: { ...env, PATH: `${nodeBin}:${SANDBOX_PATH}`, HOME: home, TMPDIR: "/tmp", PWD: spec.desk },
    };
  };
}
