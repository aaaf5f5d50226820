/**
 * Issue 35, item 1: a Node older than 22.22 is refused in one line, exit 1, before anything native
 * loads: by the bin (bundle and sources), `doctor` first, and `npm test` (pretest). `npm install`
 * fetches a newer Node instead (issue 47: test/node-bootstrap.test.ts) and refuses in one line only
 * where it cannot. The old Node: test/helpers/old-node.ts.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import nodeVersion from "../cmd/node-version.cjs";
import { REPO_ROOT } from "./helpers/daemon.js";
import {
  findOldNode,
  machineEnv,
  oldNodeSkipReason,
  runCommand,
  versionOf,
  type Ran,
} from "./helpers/old-node.js";

const oldNode = findOldNode();
const skipReason = oldNodeSkipReason(oldNode);
const LINE =
  /^Familiar needs Node\.js 22\.22 or newer; this is \d+\.\d+\.\d+\. Run `npm install` \(it fetches Node 22 .+\), or install it with .+$/;

const tmp = mkdtempSync(join(tmpdir(), "familiar-node-version-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A package root of its own holding the version check (and no .node/, whatever the checkout has). */
function checkCopy(name: string): string {
  const root = join(tmp, name);
  mkdirSync(join(root, "cmd"), { recursive: true });
  for (const f of ["node-version.cjs", "project-node.cjs"])
    cpSync(join(REPO_ROOT, "cmd", f), join(root, "cmd", f));
  return root;
}

const run = (cmd: string, args: string[], cwd = REPO_ROOT): Promise<Ran> =>
  runCommand(cmd, args, cwd, process.env);

describe("the Node version line", () => {
  it("accepts 22.22 and newer, refuses older with both versions named and the way out", () => {
    expect(nodeVersion.refusal("22.22.0")).toBeNull();
    expect(nodeVersion.refusal("v22.23.3")).toBeNull();
    expect(nodeVersion.refusal("26.0.0")).toBeNull();
    expect(nodeVersion.refusal("v22.21.9")).toMatch(LINE);
    expect(nodeVersion.refusal("v20.20.2")).toBe(
      "Familiar needs Node.js 22.22 or newer; this is 20.20.2. Run `npm install` (it fetches Node 22 from the npm registry into .node/ for `npm start`, `npm test` and `npm run familiar`), or install it with `nvm install 22` or from https://nodejs.org/en/download",
    );
    expect(nodeVersion.refusal("8.17.0")).toMatch(LINE);
  });

  it("`npm install` fetches a Node where needed, `npm test` checks first, the bin is found or named", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.preinstall).toBe("node cmd/node-bootstrap.cjs");
    expect(pkg.scripts.pretest).toBe("node cmd/node-version.cjs");
    expect(pkg.scripts.start).toBe("sh cmd/bin.sh run --config ./config.yaml");
    expect(pkg.scripts.familiar).toBe("sh cmd/bin.sh");
  });

  it("the check is silent on this Node", async () => {
    const root = checkCopy("silent");
    const r = await run(process.execPath, [join(root, "cmd", "node-version.cjs")], root);
    expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("on the project's own Node (.node/) the check prints its note, once", async () => {
    const root = checkCopy("own-node");
    const own = join(root, ".node", "node_modules", "node", "bin", "node");
    mkdirSync(join(own, ".."), { recursive: true });
    symlinkSync(process.execPath, own);
    const note =
      "familiar: Node 20.20.2 is too old; using Node 22.23.3 from .node/ (fetched from the npm registry)";
    writeFileSync(join(root, ".node", "note"), `${note}\n`);
    const r = await run(own, [join(root, "cmd", "node-version.cjs")], root);
    expect(r).toEqual({ code: 0, stdout: "", stderr: `${note}\n` });
    // A project whose .node/ holds another binary says nothing: the note is about its own Node only.
    const elsewhere = checkCopy("other-node");
    mkdirSync(join(elsewhere, ".node", "node_modules", "node", "bin"), { recursive: true });
    symlinkSync(
      join(elsewhere, "cmd", "project-node.cjs"),
      join(elsewhere, ".node", "node_modules", "node", "bin", "node"),
    );
    writeFileSync(join(elsewhere, ".node", "note"), `${note}\n`);
    const other = await run(process.execPath, [join(elsewhere, "cmd", "node-version.cjs")], elsewhere);
    expect(other).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

describe.skipIf(!oldNode)(`an old Node is refused in one line${skipReason}`, () => {
  const old = oldNode!;
  const only = (r: Ran): void => {
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(LINE);
    expect(lines[0]).toContain(`this is ${versionOf(old)!.replace(/^v/, "")}.`);
  };

  it("the check script itself (what pretest runs)", async () => {
    const root = checkCopy("old");
    only(await run(old, [join(root, "cmd", "node-version.cjs")], root));
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

  it("`npm test` with that Node and no .node/ stops at the line", async () => {
    // A copy of the package's test scripts without its dependencies: the lifecycle order is what is
    // under test.
    const root = checkCopy("npm-test");
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    writeFileSync(
      join(root, "package.json"),
      JSON.stringify({
        name: "old-node-probe",
        private: true,
        scripts: { pretest: pkg.scripts.pretest, test: pkg.scripts.test },
      }),
    );
    const r = await runCommand("npm", ["test"], root, machineEnv(old));
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr.split("\n").filter((l) => LINE.test(l))).toHaveLength(1);
  });
});
