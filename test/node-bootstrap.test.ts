/**
 * Issue 47, "Setting up": on a machine whose Node is too old (the registry's node@20, see
 * test/helpers/old-node.ts), `npm install` fetches a supported Node from the npm registry into .node/
 * (cmd/node-bootstrap.cjs), rebuilds the native addons against it, and `npm start`, `npm test`,
 * `npm run familiar` and the systemd unit's command run on it, each saying so in one line. Where the
 * registry cannot be reached, one line refuses before the Node download, and `npm start` says in one
 * line what is missing.
 *
 * The project under test is a probe: the package's real scripts (package.json), its real bootstrap,
 * version check and launcher files, the real better-sqlite3 (a native addon) as its dependency, and,
 * as the bin, the real launcher heading a few lines that print which Node runs them. The npm
 * packages come from npm's cache when .ci/run (or an earlier run) put them there, else the registry.
 */
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodeVersion from "../cmd/node-version.cjs";
import { freePort, REPO_ROOT } from "./helpers/daemon.js";
import {
  findOldNode,
  machineEnv,
  oldNodeSkipReason,
  runCommand,
  versionOf,
  type Ran,
} from "./helpers/old-node.js";

const oldNode = findOldNode();
const tmp = mkdtempSync(join(tmpdir(), "familiar-bootstrap-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};
const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string; dependencies?: Record<string, string> }>;
};
/** The native addon the probe depends on, locked as the package locks it (with what it needs). */
const ADDON = "better-sqlite3";
const addonLock = Object.fromEntries(
  [ADDON, ...Object.keys(lock.packages[`node_modules/${ADDON}`]!.dependencies ?? {})].map((n) => [
    `node_modules/${n}`,
    lock.packages[`node_modules/${n}`]!,
  ]),
);

const NOTE =
  /^familiar: Node (20\.\d+\.\d+) is too old; using Node (22\.\d+\.\d+) from \.node\/ \(fetched from the npm registry\)$/;
const FETCHING =
  /^familiar: Node 20\.\d+\.\d+ is too old; fetching Node 22\.\d+\.\d+ from the npm registry into \.node\/$/;

/** The lines of ours ("familiar: ...") among what npm and the scripts printed. */
const ours = (text: string): string[] => text.split("\n").filter((l) => l.startsWith("familiar:"));

/** What the probe's bin prints: the Node that runs it, its arguments, whether the launcher tuned it. */
interface Probe {
  node: string;
  argv: string[];
  tuned: string | null;
}
const probeOf = (r: Ran): Probe => {
  const line = r.stdout.split("\n").find((l) => l.startsWith('{"node"'));
  if (!line) throw new Error(`no probe line; stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return JSON.parse(line) as Probe;
};

/**
 * A package root laid out like the checkout: the real cmd/ files the scripts run, the real scripts and
 * allowScripts, and (`withAddon`) the native addon as its one dependency, locked as the checkout locks it.
 */
function probeProject(name: string, withAddon: boolean): string {
  const root = join(tmp, name);
  mkdirSync(join(root, "cmd"), { recursive: true });
  for (const f of ["node-bootstrap.cjs", "node-version.cjs", "project-node.cjs", "bin.sh"])
    cpSync(join(REPO_ROOT, "cmd", f), join(root, "cmd", f));
  const s = pkg.scripts;
  const deps = withAddon ? { [ADDON]: lock.packages[`node_modules/${ADDON}`]!.version! } : {};
  const manifest = {
    name: `probe-${name}`,
    version: "0.0.0",
    private: true,
    scripts: {
      preinstall: s.preinstall,
      pretest: s.pretest,
      start: s.start,
      familiar: s.familiar,
      // What a test of the package needs from the Node it runs on: the native addon, loaded.
      test: `node -e "const D=require('${ADDON}');console.log(JSON.stringify({node:process.versions.node,sqlite:new D(':memory:').prepare('select sqlite_version() v').get().v}))"`,
    },
    allowScripts: pkg.allowScripts,
    dependencies: deps,
  };
  writeFileSync(join(root, "package.json"), JSON.stringify(manifest));
  writeFileSync(
    join(root, "package-lock.json"),
    JSON.stringify({
      name: manifest.name,
      version: manifest.version,
      lockfileVersion: 3,
      requires: true,
      packages: {
        "": { name: manifest.name, version: manifest.version, dependencies: deps },
        ...(withAddon ? addonLock : {}),
      },
    }),
  );
  return root;
}

/** Builds the probe bin: cmd/launcher.sh, as cmd/bundle.mjs puts it on dist/bundle/familiar.js. */
function probeBin(root: string): string {
  const bin = join(root, "dist", "bundle", "familiar.js");
  mkdirSync(dirname(bin), { recursive: true });
  writeFileSync(
    bin,
    readFileSync(join(REPO_ROOT, "cmd", "launcher.sh"), "utf8") +
      "\nconsole.log(JSON.stringify({ node: process.versions.node, argv: process.argv.slice(2), tuned: process.env.FAMILIAR_TUNED ?? null }));\n",
  );
  chmodSync(bin, 0o755);
  return bin;
}

/** npm as the machine whose Node is `node` runs it, preferring npm's cache to the network. */
const npm = (root: string, args: string[], node: string, extra: Record<string, string> = {}): Promise<Ran> =>
  runCommand(
    "npm",
    args,
    root,
    machineEnv(node, {
      npm_config_prefer_offline: "true",
      npm_config_audit: "false",
      npm_config_fund: "false",
      ...extra,
    }),
  );

describe.skipIf(!oldNode)(
  `npm install on a too-old Node fetches a Node into .node/${oldNodeSkipReason(oldNode)}`,
  () => {
    const old = oldNode!;
    let root = "";
    let install: Ran;

    beforeAll(async () => {
      root = probeProject("fetch", true);
      probeBin(root);
      install = await npm(root, ["install"], old);
    }, 600_000);

    it("says so in one line, after one line while it fetches, and leaves .node/ whole", () => {
      expect(install.code, install.stderr).toBe(0);
      const lines = ours(install.stderr);
      expect(lines, install.stderr).toHaveLength(2);
      expect(lines[0]).toMatch(FETCHING);
      expect(lines[1]).toMatch(NOTE);
      const [, machine, used] = NOTE.exec(lines[1]!)!;
      expect(`v${machine}`).toBe(versionOf(old));
      const own = join(root, ".node", "bin", "node");
      expect(versionOf(own)).toBe(`v${used}`);
      expect(nodeVersion.refusal(used!)).toBeNull();
      // Every npm script finds it first on PATH; the note is what the scripts print.
      expect(realpathSync(join(root, "node_modules", ".bin", "node"))).toBe(realpathSync(own));
      expect(readFileSync(join(root, ".node", "note"), "utf8")).toBe(`${lines[1]}\n`);
      expect(existsSync(join(root, ".node.partial"))).toBe(false);
    });

    it("rebuilt the native addon against the fetched Node's headers", () => {
      const gypi = readFileSync(join(root, "node_modules", "better-sqlite3", "build", "config.gypi"), "utf8");
      const nodedir = /"nodedir": "([^"]+)"/.exec(gypi)?.[1];
      expect(nodedir).toBe(
        join(
          realpathSync(root),
          ".node",
          "node_modules",
          "node",
          "node_modules",
          `node-${process.platform}-${process.arch}`,
        ),
      );
    });

    it("`npm test` runs on it (the addon loads) and says so once", async () => {
      const r = await npm(root, ["test"], old);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.split("\n").find((l) => l.startsWith('{"node"'))!) as {
        node: string;
        sqlite: string;
      };
      expect(nodeVersion.refusal(out.node)).toBeNull();
      expect(out.sqlite).toMatch(/^3\.\d+/);
      expect(ours(r.stderr)).toEqual([readNote(root)]);
    }, 300_000);

    it("`npm start` and `npm run familiar` run the bin on it, tuned, and say so once", async () => {
      const start = await npm(root, ["start", "--", "--port", "18800"], old);
      expect(start.code, start.stderr).toBe(0);
      const p = probeOf(start);
      expect(nodeVersion.refusal(p.node)).toBeNull();
      expect(p.argv).toEqual(["run", "--config", "./config.yaml", "--port", "18800"]);
      expect(p.tuned).toBe("1");
      expect(ours(start.stderr)).toEqual([readNote(root)]);

      const cli = await npm(root, ["run", "familiar", "--", "doctor"], old);
      expect(cli.code, cli.stderr).toBe(0);
      expect(probeOf(cli)).toMatchObject({ argv: ["doctor"] });
      expect(nodeVersion.refusal(probeOf(cli).node)).toBeNull();
      expect(ours(cli.stderr)).toEqual([readNote(root)]);
    }, 300_000);

    it("the systemd unit's command and a linked bin run on it outside npm, with only the old Node on PATH", async () => {
      const unit = readFileSync(join(REPO_ROOT, "systemd", "familiar.service"), "utf8");
      const execStart = /^ExecStart=(.+)$/m.exec(unit)?.[1];
      expect(execStart).toBeDefined();
      // systemd's %h is the home directory; the unit expects the checkout in ~/familiar.
      const home = join(tmp, "home");
      mkdirSync(home, { recursive: true });
      symlinkSync(root, join(home, "familiar"));
      const [cmd, ...args] = execStart!.replaceAll("%h", home).split(/\s+/);
      const env = { PATH: `${dirname(old)}${delimiter}/usr/bin${delimiter}/bin`, HOME: home };
      const r = await runCommand(cmd!, args, home, env);
      expect(r.code, r.stderr).toBe(0);
      expect(nodeVersion.refusal(probeOf(r).node)).toBeNull();
      expect(probeOf(r).argv).toEqual(["run", "--config", join(home, "familiar", "config.yaml")]);
      expect(ours(r.stderr)).toEqual([readNote(root)]);

      // `npm link` / a global install: a symlink on PATH to the checkout's bin.
      const binDir = join(tmp, "global-bin");
      mkdirSync(binDir, { recursive: true });
      symlinkSync(join(root, "dist", "bundle", "familiar.js"), join(binDir, "familiar"));
      const linked = await runCommand("familiar", ["--version"], tmp, {
        ...env,
        PATH: `${binDir}${delimiter}${env.PATH}`,
      });
      expect(linked.code, linked.stderr).toBe(0);
      expect(nodeVersion.refusal(probeOf(linked).node)).toBeNull();
    }, 300_000);

    it("`npm install` on a Node that is new enough removes .node/ and says so", async () => {
      const r = await npm(root, ["install"], process.execPath);
      expect(r.code, r.stderr).toBe(0);
      expect(ours(r.stderr)).toEqual([
        expect.stringMatching(
          /^familiar: Node 2\d\.\d+\.\d+ is new enough; removed \.node\/ \(fetched for an older Node\)$/,
        ),
      ]);
      expect(existsSync(join(root, ".node"))).toBe(false);
      expect(existsSync(join(root, "node_modules", ".bin", "node"))).toBe(false);
      // The bin is back on the Node on PATH, silently.
      const start = await npm(root, ["start"], process.execPath);
      expect(probeOf(start).node).toBe(process.versions.node);
      expect(ours(start.stderr)).toEqual([]);
    }, 300_000);
  },
);

describe.skipIf(!oldNode)(
  `where no registry answers, one line refuses before any download${oldNodeSkipReason(oldNode)}`,
  () => {
    it("`npm install` stops at one line naming both ways out; `npm start` then names what is missing", async () => {
      const root = probeProject("no-registry", false);
      // A registry address nothing listens on, and an empty cache: neither metadata nor packages to be had.
      const port = await freePort();
      const cache = join(tmp, "empty-cache");
      const env = {
        npm_config_registry: `http://127.0.0.1:${port}/`,
        npm_config_cache: cache,
        npm_config_fetch_retries: "0",
      };
      const r = await npm(root, ["install"], oldNode!, env);
      expect(r.code).not.toBe(0);
      expect(ours(r.stderr), r.stderr).toEqual([
        expect.stringMatching(
          /^familiar: Node 20\.\d+\.\d+ is too old, and no Node \^22\.22\.0 can be had from the npm registry \(npm: E[A-Z0-9]+\); install Node 22\.22 or newer \(`nvm install 22`, or https:\/\/nodejs\.org\/en\/download\) and run `npm install` again$/,
        ),
      ]);
      expect(existsSync(join(root, ".node"))).toBe(false);
      expect(existsSync(join(root, ".node.partial"))).toBe(false);

      const start = await npm(root, ["start"], oldNode!, env);
      expect(start.code).not.toBe(0);
      expect(ours(start.stderr)).toEqual([
        "familiar: dist/bundle/familiar.js is missing: `npm install` builds it (see its last lines if it stopped), or `npm run build`",
      ]);
    }, 300_000);
  },
);

describe.skipIf(process.getuid?.() !== 0)("a .node/ another user planted is never run", () => {
  it("the bin runs the Node on PATH instead, silently; the same .node/ of the user's own is run", async () => {
    const root = probeProject("planted", false);
    const bin = probeBin(root);
    // A "Node" that only says it ran, where the bootstrap would have put the real one.
    const planted = join(root, ".node", "node_modules", "node", "bin", "node");
    mkdirSync(dirname(planted), { recursive: true });
    writeFileSync(planted, `#!/bin/sh\necho '{"node":"planted","argv":[],"tuned":null}'\n`);
    chmodSync(planted, 0o755);
    mkdirSync(join(root, ".node", "bin"));
    symlinkSync("../node_modules/node/bin/node", join(root, ".node", "bin", "node"));
    writeFileSync(join(root, ".node", "note"), "familiar: planted note\n");
    const env = { PATH: `${dirname(process.execPath)}${delimiter}/usr/bin${delimiter}/bin`, HOME: tmp };

    // Owned by nobody (uid 65534): refused, whoever may write it.
    chownSync(join(root, ".node"), 65534, 65534);
    chownSync(planted, 65534, 65534);
    const refused = await runCommand(bin, ["--version"], root, env);
    expect(probeOf(refused).node).toBe(process.versions.node);
    expect(refused.stderr).toBe("");

    // The control: the same files owned by the user who runs the bin are the project's Node.
    chownSync(join(root, ".node"), 0, 0);
    chownSync(planted, 0, 0);
    const used = await runCommand(bin, ["--version"], root, env);
    expect(probeOf(used).node).toBe("planted");
    expect(ours(used.stderr)).toEqual(["familiar: planted note"]);
  });
});

/** The note the bootstrap wrote: the one line every script prints. */
function readNote(root: string): string {
  return readFileSync(join(root, ".node", "note"), "utf8").trimEnd();
}
