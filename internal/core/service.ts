/**
 * A long-running part of the daemon, started and stopped in order by the wiring root, and the health
 * it reports to `/status` and `/healthz`.
 */

export interface ServiceHealth {
  state: "ok" | "starting" | "degraded" | "error" | "disabled";
  detail?: string;
  [k: string]: unknown;
}

/** A long-running part of the daemon started and stopped in order. */
export interface Service {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): ServiceHealth;
}
