/**
 * `familiar run`: starts the daemon in the foreground, handles SIGTERM/SIGINT with a graceful drain.
 * A start failure prints one line and exits non-zero.
 */
import { Daemon } from "../daemon/daemon.js";

export async function runCommand(configPath: string): Promise<void> {
  let daemon: Daemon;
  try {
    daemon = await Daemon.start({ configPath });
  } catch (err) {
    const msg = (err as Error).message ?? String(err);
    process.stderr.write(`familiar: failed to start: ${msg.replace(/\n\s*/g, "; ")}\n`);
    process.exit(1);
  }
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      daemon.logger.warn("second signal: exiting now");
      process.exit(1);
    }
    void daemon.stop(sig).then(
      () => process.exit(0),
      (err: unknown) => {
        daemon.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
