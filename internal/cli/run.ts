/**
 * `familiar run`: starts the daemon in the foreground, handles SIGTERM/SIGINT with a graceful drain.
 * A start failure prints one line and exits non-zero.
 */
import { Daemon } from "../daemon/daemon.js";
import { envPort, PORT_ENV } from "../config/env-overrides.js";
import { registerDaemon, rememberWorkspace, unregisterDaemon } from "../gateway/daemon-registry.js";
import { markWorkspace } from "../gateway/workspace-marker.js";

/**
 * Starts the daemon. `port` (from `--port`) goes into FAMILIAR_PORT, so it wins over the file and
 * the environment, survives hot reloads, and reaches anything the daemon starts.
 */
export async function runCommand(configPath: string, port?: string): Promise<void> {
  if (port !== undefined) {
    const { problem } = envPort({ [PORT_ENV]: port });
    if (problem || !port.trim()) {
      process.stderr.write(`familiar: --port: expected an integer 1-65535, got ${JSON.stringify(port)}\n`);
      process.exit(1);
    }
    process.env[PORT_ENV] = port.trim();
  }
  let daemon: Daemon;
  try {
    daemon = await Daemon.start({ configPath });
  } catch (err) {
    const msg = (err as Error).message ?? String(err);
    process.stderr.write(`familiar: failed to start: ${oneLine(msg)}\n`);
    process.exit(1);
  }
  // The owner's CLI never takes a config or card from the ground the assistant writes
  // (gateway/owner-files.ts): mark the workspace root and remember it beside the registry.
  const workspace = daemon.ctx.config().workspace;
  markWorkspace(workspace, daemon.logger);
  rememberWorkspace(workspace);
  // The CLI in any directory finds this daemon (gateway/daemon-registry.ts); gone at a clean stop.
  if (daemon.address) {
    const host = daemon.address.family === "IPv6" ? `[${daemon.address.address}]` : daemon.address.address;
    const dial = host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
    registerDaemon({
      pid: process.pid,
      configFile: daemon.config.file,
      dataDir: daemon.ctx.config().data_dir,
      url: `http://${dial}:${daemon.address.port}`,
      startedAt: Date.now(),
      workspace,
    });
  }
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      daemon.logger.warn("second signal: exiting now");
      process.exit(1);
    }
    void daemon.stop(sig).then(
      () => {
        unregisterDaemon();
        process.exit(0);
      },
      (err: unknown) => {
        daemon.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

/** `file: 2 config error(s):\n  a\n  b` -> `file: 2 config error(s): a; b` (journald shows one line). */
function oneLine(msg: string): string {
  return msg
    .trim()
    .replace(/:\s*\n\s*/g, ": ")
    .replace(/\s*\n\s*/g, "; ");
}
