/**
 * Which exec mode is live, in words: for the start-up log and `familiar doctor`.
 */
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import { INSTALL_HINT, probeSandbox } from "./sandbox-probe.js";
import { probeCgroup } from "./sandbox-cgroup.js";

/** One doctor line: status, and what the owner should know or do. */
export interface SandboxCheck {
  status: "ok" | "warn" | "fail";
  detail: string;
}

/** The sandbox check of `familiar doctor` for this config. */
export async function checkSandbox(cfg: Config): Promise<SandboxCheck> {
  const sb = cfg.tools.exec.sandbox;
  const st = await probeSandbox();
  const outside =
    cfg.tools.exec.security === "full"
      ? "commands run UNSANDBOXED without asking (tools.exec.security: full)"
      : "every command outside tools.exec.allowlist asks the owner first";
  if (!sb.enabled)
    return {
      status: "warn",
      detail: `off (tools.exec.sandbox.enabled: false): ${outside}${st.ok ? "; bubblewrap works here, so it could be on" : ""}`,
    };
  if (!st.ok) return { status: "warn", detail: `not available: ${st.problem ?? INSTALL_HINT}; ${outside}` };
  const extras = [
    sb.network ? "network on" : "no network",
    st.prlimit ? "limits via prlimit" : "no prlimit found: time limit only",
    cgroupDetail(sb.total_memory_mb),
    st.features?.size
      ? `/tmp sized to ${sb.tmp_mb} MB`
      : "this bwrap cannot size /tmp (needs 0.8.0 or later)",
    ...(st.features?.disableUserns ? [] : ["nested user namespaces not disabled (bwrap or kernel too old)"]),
    ...quarantineNote(cfg),
    ...(process.getuid?.() === 0 ? ["running as root: the process-count limit does not apply"] : []),
  ];
  return {
    status: "ok",
    detail: `${st.version ?? "bwrap"} at ${st.bwrap ?? "?"} works (${extras.join(", ")})`,
  };
}

/** Files left in quarantine (an unanswered question): the owner may want to look. */
function quarantineNote(cfg: Config): string[] {
  const dir = join(resolve(cfg.data_dir), "quarantine");
  let n: number;
  try {
    n = readdirSync(dir).length;
  } catch {
    return [];
  }
  return n > 0 ? [`${n} set(s) of planted files held in quarantine at ${dir}`] : [];
}

function cgroupDetail(totalMb: number): string {
  const cg = probeCgroup();
  return cg.ok
    ? `each command's processes together limited to ${totalMb} MB (cgroup v${cg.version ?? "?"})`
    : `no memory cgroup (${cg.problem ?? "unavailable"}): memory is limited per process only`;
}

/** Logs the live mode once at start-up. */
export async function logSandboxMode(cfg: Config, logger: Logger): Promise<void> {
  const c = await checkSandbox(cfg);
  if (c.status === "ok") logger.info({ sandbox: c.detail }, "exec commands run in the bubblewrap sandbox");
  else logger.warn({ sandbox: c.detail }, "exec commands run WITHOUT a sandbox");
}
