/**
 * Which config file a CLI command uses when none was named. `--config PATH` and FAMILIAR_CONFIG win;
 * then `./config.yaml` when it exists; else the config of a running daemon of this user (the registry
 * in the state dir, gateway/daemon-registry.ts), so `familiar status` works from any directory. When
 * several daemons run, the newest is used and stderr says which, and how to pick another.
 *
 * Whichever way it was found, the file must pass gateway/owner-files.ts (not in a workspace, owned by
 * the user, writable by nobody else): {@link configRefusal} says why not, in one line.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { readRegistry } from "../gateway/daemon-registry.js";
import { distrustReason } from "../gateway/owner-files.js";

/** The default `--config` value (the CLI's `./config.yaml`). */
export const IMPLICIT_CONFIG = "./config.yaml";

/** The config path to use for `given` (the option's value) and the note to print, if any. */
export function resolveConfigPath(
  given: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): { path: string; note?: string } {
  if (env.FAMILIAR_CONFIG || given !== IMPLICIT_CONFIG) return { path: given };
  if (existsSync(resolve(cwd, given))) return { path: given };
  const live = readRegistry(env).filter((e) => existsSync(e.configFile));
  const first = live[0];
  if (!first) return { path: given };
  if (live.length === 1) return { path: first.configFile };
  return {
    path: first.configFile,
    note:
      `familiar: no ./config.yaml here; ${live.length} daemons are running, using the newest: ` +
      `${first.configFile} (pid ${first.pid}, ${first.url}). Others: ` +
      live
        .slice(1)
        .map((e) => `${e.configFile} (pid ${e.pid}, ${e.url})`)
        .join(", ") +
      ". Pick one with --config PATH or FAMILIAR_CONFIG.",
  };
}

/** The one line to print when `path` must not be read (see the module comment), else undefined. */
export function configRefusal(path: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const reason = distrustReason(path, env);
  if (!reason) return undefined;
  return `not reading ${resolve(path)}: ${reason}; name your own config with --config PATH or FAMILIAR_CONFIG`;
}
