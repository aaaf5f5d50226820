// `npm install` on a machine whose Node is too old (package.json preinstall runs this file): fetch a
// supported Node from the npm registry into .node/ (the registry's `node` package, as .ci/run does),
// rebuild the native addons against it, and point node_modules/.bin/node at it, so that every npm
// script (the rest of this install's `prepare` build included) and the bin run on it. One line says
// so; where it cannot be done, one line refuses, before the Node download starts.
//
// Why here and not earlier: npm runs the root package's preinstall only after it has fetched and
// unpacked every dependency (npm's install command reifies the tree first); no project file runs
// before that. The dependencies are the same on every Node, so that part is not wasted.
//
// On a Node that is new enough this is silent, and removes a .node/ left from an older Node.
// Layout and the note: cmd/project-node.cjs. Invariant: CommonJS with Node built-ins only, in syntax
// every Node that npm runs on parses (ES5 plus optional catch bindings).
"use strict";

var cp = require("child_process");
var fs = require("fs");
var path = require("path");
var versionLine = require("./node-version.cjs");
var projectNode = require("./project-node.cjs");

/** The versions fetched: the newest release of the oldest supported line (the one CI runs first). */
var SPEC = "^" + versionLine.MIN_MAJOR + "." + versionLine.MIN_MINOR + ".0";

function say(line) {
  process.stderr.write(line + "\n");
}

/** Runs `file args`, capturing its output; never throws. */
function run(file, args, opts) {
  var r = cp.spawnSync(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 64 * 1024 * 1024,
  });
  return {
    ok: !r.error && r.status === 0,
    stdout: r.stdout || "",
    stderr: r.stderr || "",
    error: r.error ? r.error.message : null,
  };
}

/** `file -p process.versions.node`, or null when it does not run. */
function versionOf(file, env) {
  var r = run(file, ["-p", "process.versions.node"], { env: env });
  return r.ok ? r.stdout.trim() : null;
}

/**
 * The Node the machine runs npm (and so the scripts, without us) on: npm exports its own binary as
 * npm_node_execpath. This process may already be the project's Node (node_modules/.bin/node from an
 * earlier install comes first on PATH).
 */
function machineVersion(env) {
  var npmNode = env.npm_node_execpath;
  if (!npmNode) return process.versions.node;
  try {
    if (fs.realpathSync(npmNode) === fs.realpathSync(process.execPath)) return process.versions.node;
  } catch {
    return process.versions.node;
  }
  return versionOf(npmNode, env) || process.versions.node;
}

/** How to run npm: the npm running this install (npm_execpath) on `node`, else `npm` from PATH. */
function npmCommand(env, node) {
  if (env.npm_execpath && /\.c?js$/.test(env.npm_execpath)) return [node, env.npm_execpath];
  return [process.platform === "win32" ? "npm.cmd" : "npm"];
}

/** The error code npm printed (`npm error code ENOTFOUND`), or the last line it printed. */
function npmReason(r) {
  var text = r.error || r.stderr + "\n" + r.stdout;
  var code = /npm (?:error|ERR!) code (\S+)/.exec(text);
  if (code) return code[1];
  var lines = text.split("\n").filter(function (l) {
    return l.trim();
  });
  return lines.length ? lines[lines.length - 1].trim() : "no output";
}

function removeTree(p) {
  if (fs.rmSync) fs.rmSync(p, { recursive: true, force: true });
  else if (fs.existsSync(p)) cp.spawnSync("rm", ["-rf", p]);
}

/** Removes node_modules/.bin/node when it is our link (npm manages the rest of that folder). */
function unlinkNpmBin(p) {
  try {
    if (fs.lstatSync(p.npmBin).isSymbolicLink() && /\.node/.test(fs.readlinkSync(p.npmBin)))
      fs.unlinkSync(p.npmBin);
  } catch {
    // not there
  }
}

function symlink(target, at) {
  try {
    fs.unlinkSync(at);
  } catch {
    // not there
  }
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.symlinkSync(target, at);
}

/**
 * The installed packages with install scripts (native addons among them: npm counts a binding.gyp as
 * one), by name, from npm's record of node_modules (the lockfile when that record is missing). Never
 * the root package: rebuilding it would run this preinstall again.
 */
function scriptedPackages(root) {
  var files = [path.join(root, "node_modules", ".package-lock.json"), path.join(root, "package-lock.json")];
  for (var i = 0; i < files.length; i++) {
    var lock;
    try {
      lock = JSON.parse(fs.readFileSync(files[i], "utf8"));
    } catch {
      continue;
    }
    var names = {};
    var pkgs = lock.packages || {};
    for (var loc in pkgs) {
      var at = loc.lastIndexOf("node_modules/");
      if (at >= 0 && pkgs[loc] && pkgs[loc].hasInstallScript)
        names[loc.slice(at + "node_modules/".length)] = true;
    }
    return Object.keys(names).sort();
  }
  return [];
}

function refuse(machine, why) {
  say(
    "familiar: Node " +
      machine +
      " is too old, and " +
      why +
      "; install Node " +
      versionLine.MIN_MAJOR +
      "." +
      versionLine.MIN_MINOR +
      " or newer (`nvm install " +
      versionLine.MIN_MAJOR +
      "`, or https://nodejs.org/en/download) and run `npm install` again",
  );
  return 1;
}

/**
 * The newest version matching SPEC that the registry (or, offline, npm's cache) has, or an object
 * with the reason it has none. Only metadata: this is the check that comes before the download.
 */
function resolveVersion(npm, env, root) {
  var r = run(npm[0], npm.slice(1).concat(["view", "node@" + SPEC, "version", "--json"]), {
    cwd: root,
    env: env,
  });
  if (!r.ok) return { reason: npmReason(r) };
  var got;
  try {
    got = JSON.parse(r.stdout);
  } catch {
    return { reason: "unreadable answer: " + r.stdout.trim().slice(0, 80) };
  }
  var list = [].concat(got).filter(function (v) {
    return typeof v === "string" && versionLine.refusal(v) === null;
  });
  if (!list.length) return { reason: "no release matches node@" + SPEC };
  list.sort(function (a, b) {
    var x = a.split(".").map(Number);
    var y = b.split(".").map(Number);
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
  return { version: list[list.length - 1] };
}

/** Fetches node@`version` into .node/ (through a partial folder, renamed once it runs). */
function fetchNode(npm, env, root, p, version) {
  var partial = p.dir + ".partial";
  removeTree(partial);
  fs.mkdirSync(partial, { recursive: true });
  var r = run(
    npm[0],
    npm
      .slice(1)
      .concat([
        "install",
        "--prefix",
        partial,
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "node@" + version,
      ]),
    { cwd: root, env: env },
  );
  if (!r.ok) {
    removeTree(partial);
    return {
      reason: "Node " + version + " could not be fetched from the npm registry (npm: " + npmReason(r) + ")",
    };
  }
  var got = versionOf(path.join(partial, "node_modules", "node", "bin", "node"), env);
  if (!got || versionLine.refusal(got) !== null) {
    removeTree(partial);
    return { reason: "the Node " + version + " fetched from the npm registry does not run on this machine" };
  }
  removeTree(p.dir);
  fs.renameSync(partial, p.dir);
  return { version: got };
}

function main() {
  var root = path.join(__dirname, "..");
  var p = projectNode.paths(root);
  var env = process.env;
  var machine = machineVersion(env);

  if (versionLine.refusal(machine) === null) {
    if (fs.existsSync(p.dir)) {
      unlinkNpmBin(p);
      removeTree(p.dir);
      say(
        "familiar: Node " +
          machine +
          " is new enough; removed " +
          projectNode.DIR +
          "/ (fetched for an older Node)",
      );
    }
    return 0;
  }
  if (process.platform === "win32")
    return refuse(machine, "fetching a Node into .node/ is not done on Windows");

  // Nothing uses .node/ until it is whole again (a dangling link would also get in the way of the npm
  // runs below); the links and the note are made again at the end.
  unlinkNpmBin(p);
  removeTree(p.bin);
  removeTree(p.note);
  // A .node/ of another user's (planted in a shared checkout) is never run: fetched anew instead.
  var used = projectNode.ours(p.dir) && projectNode.ours(p.binary) ? versionOf(p.binary, env) : null;
  if (!used || versionLine.refusal(used) !== null) {
    var npm = npmCommand(env, process.execPath);
    var want = resolveVersion(npm, env, root);
    if (!want.version)
      return refuse(
        machine,
        "no Node " + SPEC + " can be had from the npm registry (npm: " + want.reason + ")",
      );
    say(
      "familiar: Node " +
        machine +
        " is too old; fetching Node " +
        want.version +
        " from the npm registry into " +
        projectNode.DIR +
        "/",
    );
    var got = fetchNode(npm, env, root, p, want.version);
    if (!got.version) return refuse(machine, got.reason);
    used = got.version;
  }

  // Native addons built against the new Node, by npm on that Node (install scripts run with its bin
  // first on PATH) with its headers (node-gyp could not download them without the network).
  var binDir = path.dirname(p.binary);
  var renv = {};
  for (var k in env) renv[k] = env[k];
  renv.PATH = binDir + path.delimiter + (env.PATH || "");
  var headers = projectNode.headersOf(p.pkg);
  // Never the old Node's headers (a nodedir set for it): node-gyp then fetches the right ones.
  if (headers) renv.npm_config_nodedir = headers;
  else delete renv.npm_config_nodedir;
  var names = scriptedPackages(root);
  if (names.length) {
    var npmNew = npmCommand(env, p.binary);
    var rebuilt = run(npmNew[0], npmNew.slice(1).concat(["rebuild", "--loglevel=error"], names), {
      cwd: root,
      env: renv,
    });
    if (!rebuilt.ok)
      return refuse(
        machine,
        "rebuilding " + names.join(", ") + " for Node " + used + " failed (npm: " + npmReason(rebuilt) + ")",
      );
  }

  // The commit point: the launcher and the scripts use .node/ only from here on.
  symlink(path.relative(path.dirname(p.bin), p.binary), p.bin);
  symlink(path.relative(path.dirname(p.npmBin), p.bin), p.npmBin);
  var note = projectNode.noteLine(machine, used);
  fs.writeFileSync(p.note, note + "\n");
  say(note);
  return 0;
}

module.exports = { SPEC: SPEC };

if (require.main === module) {
  var code = 1;
  try {
    code = main();
  } catch (err) {
    // A file-system step failed (a .node/ this user may not replace, a full disk): one line, not a trace.
    say("familiar: setting up the Node in " + projectNode.DIR + "/ failed: " + (err && err.message));
  }
  process.exit(code);
}
