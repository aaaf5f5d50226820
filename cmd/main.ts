/**
 * The CLI proper, imported by cmd/familiar.ts once the Node version is checked and the daemon's runtime
 * settings are in place. Subcommands import their modules lazily so `familiar --version` and
 * `familiar run` load only what they use.
 */
import { buildProgram } from "../internal/cli/program.js";

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`familiar: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  });
