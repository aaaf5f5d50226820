#!/usr/bin/env node
/**
 * The `familiar` CLI. Subcommands import their modules lazily so `familiar --version` and
 * `familiar run` load only what they use.
 */
import { buildProgram } from "../internal/cli/program.js";

// Owner data is private on disk (docs/security.md, invariant 5): whatever the CLI or the daemon it
// runs creates (config, workspace, data dir, database) is owner-only from the first byte.
process.umask(0o077);

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`familiar: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  });
