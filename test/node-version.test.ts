/**
 * Issue 35, item 1: a Node older than 22.22 is refused in one line, exit 1, before anything native
 * loads: by the bin (bundle and sources), `doctor` first, `npm install` (preinstall) and `npm test`
 * (pretest). The old Node is the npm registry's node@20, cached by .ci/run under
 * ~/.cache/familiar/node-20 (or FAMILIAR_OLD_NODE, or any `node` on PATH older than 22.22).
 */
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import nodeVersion from "../cmd/node-version.cjs";
import { REPO_ROOT } from "./helpers/daemon.js";

const OLD_NODE_CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "familiar", "node-20");

function versionOf(bin: string): string | undefined {
  try {
    return execFileSync(bin, ["-v"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

/** A Node binary older than 22.22, or undefined. */
function findOldNode(): string | undefined {
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

const oldNode = findOldNode();
const skipReason = oldNode
  ? ""
  : ` [skipped: no Node older than 22.22 found; run: npm install --prefix ${OLD_NODE_CACHE} node@20]`;
const LINE = /^Familiar needs Node\.js 22\.22 or newer; this is \d+\.\d+\.\d+\. Install it with .+$/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? REPO_ROOT, env: opts.env ?? process.env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", rej);
    child.on("exit", (code) => res({ code, stdout, stderr }));
  });
}

describe("the Node version line", () => {
  it("accepts 22.22 and newer, refuses older with both versions named", () => {
    expect(nodeVersion.refusal("22.22.0")).toBeNull();
    expect(nodeVersion.refusal("v22.23.3")).toBeNull();
    expect(nodeVersion.refusal("26.0.0")).toBeNull();
    expect(nodeVersion.refusal("v22.21.9")).toMatch(LINE);
    expect(nodeVersion.refusal("v20.20.2")).toBe(
      "Familiar needs Node.js 22.22 or newer; this is 20.20.2. Install it with `nvm install 22` (or `fnm install 22`), or from https://nodejs.org/en/download",
    );
    expect(nodeVersion.refusal("8.17.0")).toMatch(LINE);
  });

  it("`npm install` and `npm test` run the check first (preinstall, pretest)", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.preinstall).toBe("node cmd/node-version.cjs");
    expect(pkg.scripts.pretest).toBe("node cmd/node-version.cjs");
  });

  it("the check is silent on this Node", async () => {
    const r = await run(process.execPath, ["cmd/node-version.cjs"]);
    expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

describe.skipIf(!oldNode)(`an old Node is refused in one line${skipReason}`, () => {
  const old = oldNode!;
  const only = (r: Run): void => {
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(LINE);
    expect(lines[0]).toContain(`this is ${versionOf(old)!.replace(/^v/, "")}.`);
  };

  it("the check script itself (what preinstall and pretest run)", async () => {
    only(await run(old, ["cmd/node-version.cjs"]));
  });

  it("the bundled bin: doctor, run and the default command", async () => {
    const bin = join(REPO_ROOT, "dist", "bundle", "familiar.js");
    if (!existsSync(bin)) throw new Error(`${bin} missing: run npm run build`);
    only(await run(old, [bin, "doctor"]));
    only(await run(old, [bin, "run", "--config", "nowhere.yaml"]));
    only(await run(old, [bin]));
  });

  it("the sources through tsx: doctor", async () => {
    const tsx = pathToFileURL(createRequire(join(REPO_ROOT, "package.json")).resolve("tsx")).href;
    only(await run(old, ["--import", tsx, join(REPO_ROOT, "cmd", "familiar.ts"), "doctor"]));
  });

  it("`npm install` and `npm test` with that Node stop at the line", async () => {
    // A copy of the package without its dependencies: the lifecycle order is what is under test, and
    // the real dependencies would need the network.
    const dir = mkdtempSync(join(tmpdir(), "familiar-old-node-"));
    try {
      mkdirSync(join(dir, "cmd"));
      cpSync(join(REPO_ROOT, "cmd", "node-version.cjs"), join(dir, "cmd", "node-version.cjs"));
      const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as Record<
        string,
        unknown
      >;
      const scripts = pkg.scripts as Record<string, string>;
      writeFileSync(
        join(dir, "package.json"),
        JSON.stringify({
          ...pkg,
          dependencies: {},
          devDependencies: {},
          scripts: {
            preinstall: scripts.preinstall,
            pretest: scripts.pretest,
            test: scripts.test,
          },
        }),
      );
      // `npm` from PATH with the old Node first: npm's own shebang (`env node`) and the scripts' `node`
      // both resolve to it, as on a machine whose system Node is old.
      const env = { ...process.env, PATH: `${dirname(old)}${delimiter}${process.env.PATH ?? ""}` };
      for (const cmd of [["install", "--no-audit", "--no-fund", "--offline"], ["test"]]) {
        const r = await run("npm", cmd, { cwd: dir, env });
        expect(r.code, r.stderr).not.toBe(0);
        expect(r.stderr.split("\n").filter((l) => LINE.test(l))).toHaveLength(1);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
