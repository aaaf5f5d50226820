/**
 * A Node older than Familiar needs, for the tests of what happens on one (test/node-version.test.ts,
 * test/node-bootstrap.test.ts): the npm registry's node@20, cached by .ci/run under
 * ~/.cache/familiar/node-20, or FAMILIAR_OLD_NODE, or any `node` on PATH older than 22.22. Plus the
 * way those tests run npm and Node under it and collect what they print.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import nodeVersion from "../../cmd/node-version.cjs";

/** Where .ci/run caches the registry's node@20. */
export const OLD_NODE_CACHE = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "familiar",
  "node-20",
);

/** `bin -v` ("v20.20.2"), or undefined when it does not run. */
export function versionOf(bin: string): string | undefined {
  try {
    return execFileSync(bin, ["-v"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

/** A Node binary older than 22.22, or undefined. */
export function findOldNode(): string | undefined {
  const candidates = [
    process.env.FAMILIAR_OLD_NODE,
    join(OLD_NODE_CACHE, "node_modules", "node", "bin", "node"),
    ...(process.env.PATH ?? "").split(delimiter).map((d) => join(d, "node")),
    "/usr/bin/node",
    "/usr/local/bin/node",
  ];
  for (const c of candidates) {
    if (!c || !existsSync(c)) continue;
    const v = versionOf(c);
    if (v && nodeVersion.refusal(v) !== null) return c;
  }
  return undefined;
}

/** Why the old-Node tests skip, for their title ("" when an old Node was found). */
export function oldNodeSkipReason(found: string | undefined): string {
  return found
    ? ""
    : ` [skipped: no Node older than 22.22 found; run: npm install --prefix ${OLD_NODE_CACHE} node@20]`;
}

/**
 * The environment of a machine whose Node is `node`: this one's (its proxy and certificate settings
 * included, which npm needs to reach the registry) less what the npm and vitest that run this test
 * put there (npm_*, NODE, NODE_OPTIONS, INIT_CWD, VITEST*) and the developer's FAMILIAR_* settings;
 * `node`'s folder first on PATH (npm's own `#!/usr/bin/env node` and every script's `node` resolve to
 * it); and, for the registry's `node` package, its headers as node-gyp's nodedir (what a Node
 * installed from nodejs.org has beside itself).
 */
export function machineEnv(node: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(npm_|NODE$|NODE_OPTIONS$|INIT_CWD$|VITEST|FAMILIAR_)/i.test(k)) env[k] = v;
  env.PATH = `${dirname(node)}${delimiter}${env.PATH ?? ""}`;
  const modules = join(dirname(node), "..", "node_modules");
  if (existsSync(modules))
    for (const name of readdirSync(modules))
      if (existsSync(join(modules, name, "include", "node", "node_version.h")))
        env.npm_config_nodedir = join(modules, name);
  return { ...env, ...extra };
}

/** What a command printed and how it exited. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args` in `cwd` with `env` and collects its output. */
export function runCommand(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", rej);
    child.on("close", (code) => res({ code, stdout, stderr }));
  });
}
