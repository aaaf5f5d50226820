/**
 * Settings that the environment (and `familiar run --port`, which sets FAMILIAR_PORT) lays over the
 * file. Why: choosing a port is the first thing a newcomer whose 18790 is taken needs, and editing
 * config.yaml for it should not be the only way. Applied on every load, so a hot reload keeps them.
 */
import type { Config } from "./schema.js";
import type { ConfigProblem } from "./errors.js";

/** Environment variable that overrides `gateway.port`. */
export const PORT_ENV = "FAMILIAR_PORT";

/** Reads FAMILIAR_PORT: undefined when unset or empty, a problem when it is not a port. */
export function envPort(env: NodeJS.ProcessEnv): { port?: number; problem?: ConfigProblem } {
  const raw = env[PORT_ENV]?.trim();
  if (!raw) return {};
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isInteger(n) || n < 1 || n > 65535)
    return {
      problem: {
        path: `${PORT_ENV} (environment)`,
        message: `expected an integer 1-65535 (it overrides gateway.port), got ${JSON.stringify(raw)}`,
      },
    };
  return { port: n };
}

/** The config with the environment's overrides applied (a new object when anything changed). */
export function applyEnvOverrides(config: Config, env: NodeJS.ProcessEnv): Config {
  const { port } = envPort(env);
  if (port === undefined || port === config.gateway.port) return config;
  return { ...config, gateway: { ...config.gateway, port } };
}
