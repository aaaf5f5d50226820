/**
 * `familiar config check [--config PATH]`: validates the config the way the daemon would. Prints every
 * problem with its key path and exits 1; prints a one-line summary and exits 0 when valid.
 */
import { loadConfigFile } from "../config/load.js";
import { ConfigError, formatProblem, type ConfigProblem } from "../config/errors.js";
import type { Config } from "../config/schema.js";
import { crossFieldProblems } from "../config/cross-field.js";
import { contextWindowProblems, contextWindowWarnings } from "../models/context-window.js";
import { agentWindowReport } from "./agent-window-findings.js";

/** True for addresses that only this machine can reach. */
export function isLoopback(bind: string): boolean {
  return ["127.0.0.1", "::1", "localhost"].includes(bind) || bind.startsWith("127.");
}

/** Problems the schema cannot see but that stop the daemon from starting. */
export function startProblems(cfg: Config): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  // A non-loopback bind without gateway.token is fine: the daemon generates a token (doctor notes it).
  const providers = Object.keys(cfg.models.providers);
  // Without any provider (and no model naming one, which the schema refuses) the echo model answers.
  if (providers.length === 0) return out;
  if (!cfg.models.primary)
    out.push({
      path: "models.primary",
      message: `expected a <provider>/<model> from models.providers (${providers.join(", ")}), got nothing (key missing)`,
    });
  // A primary, fallback or agent model naming a provider that is not configured is a schema error
  // (config/model-provider-check.ts), so the daemon refuses it the same way.
  // A window the daemon refuses at run time (REQ-401) is a start problem, not a surprise on turn one.
  out.push(...contextWindowProblems(cfg));
  return out;
}

/** `gateway 127.0.0.1:18790, 1 provider, channels: telegram` */
export function summarize(cfg: Config): string {
  const gw = cfg.gateway.enabled ? `gateway ${cfg.gateway.bind}:${cfg.gateway.port}` : "gateway off";
  const n = Object.keys(cfg.models.providers).length;
  const providers = n === 0 ? "no provider (echo model)" : `${n} provider${n === 1 ? "" : "s"}`;
  const channels = Object.entries(cfg.channels)
    .filter(([, c]) => c.enabled)
    .map(([name]) => name);
  return `${gw}, ${providers}, channels: ${channels.length > 0 ? channels.join(", ") : "none"}`;
}

/** CLI entry; sets the exit code (0 valid, 1 invalid). */
export function configCheckCommand(opts: { config: string }): void {
  let cfg: Config;
  try {
    cfg = loadConfigFile(opts.config).config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // One pass: the checks across keys run too, on the keys without field errors.
    printProblems(opts.config, [
      ...err.problems,
      ...crossFieldProblems(opts.config, err.problems, startProblems),
    ]);
    return;
  }
  // Workspace agent files and API agents meet the same window rules as config.yaml agents.
  const agents = agentWindowReport(cfg);
  const problems = [...startProblems(cfg), ...agents.findings.filter((f) => f.level === "error")];
  if (problems.length > 0) {
    printProblems(opts.config, problems);
    return;
  }
  process.stdout.write(`config OK: ${opts.config} (${summarize(cfg)})\n`);
  // Usable but small windows (REQ-401's 32,000 warning), for every model of every agent.
  for (const w of [...contextWindowWarnings(cfg), ...agents.findings])
    process.stdout.write(`warning: ${formatProblem(w)}\n`);
  if (agents.apiUnreadable) process.stdout.write(`warning: ${agents.apiUnreadable}\n`);
}

function printProblems(file: string, problems: ConfigProblem[]): void {
  const n = problems.length;
  process.stderr.write(
    `config INVALID: ${file}: ${n} error${n === 1 ? "" : "s"}\n${problems.map((p) => `  ${formatProblem(p)}`).join("\n")}\n`,
  );
  process.exitCode = 1;
}
