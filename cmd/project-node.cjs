// The project's own Node: where `npm install` puts the Node it fetches from the npm registry when the
// machine's Node is too old (cmd/node-bootstrap.cjs), and the one line that says it is in use.
//
// Layout, relative to the package root (what every reader of it relies on):
//   .node/node_modules/node/        the registry's `node` package (binary in bin/, headers beside it)
//   .node/bin/node                  symlink to it: the commit point, made last, only once it runs
//   .node/note                      the one line scripts print when they use it
//   node_modules/.bin/node          symlink to .node/bin/node: npm puts node_modules/.bin first on
//                                   PATH for every script, so `npm start`, `npm test`, `npm run ...`
//                                   and the dependencies' install scripts all run this Node
// The bin's sh head (cmd/launcher.sh) looks for .node/bin/node beside dist/ on its own, for the
// systemd unit and a linked `familiar`, which npm does not start.
//
// Invariant: plain ES5 CommonJS with Node built-ins only, like cmd/node-version.cjs: an old Node runs it.
"use strict";

var fs = require("fs");
var path = require("path");

/** The folder, under the package root, that holds the fetched Node. */
var DIR = ".node";

/** The paths of the project's own Node under package root `root`. */
function paths(root) {
  var dir = path.join(root, DIR);
  return {
    dir: dir,
    pkg: path.join(dir, "node_modules", "node"),
    binary: path.join(dir, "node_modules", "node", "bin", "node"),
    bin: path.join(dir, "bin", "node"),
    note: path.join(dir, "note"),
    npmBin: path.join(root, "node_modules", ".bin", "node"),
  };
}

/** The one line that says the project's Node is in use, e.g. for `machine` "20.20.2", `used` "22.23.3". */
function noteLine(machine, used) {
  return (
    "familiar: Node " +
    machine +
    " is too old; using Node " +
    used +
    " from " +
    DIR +
    "/ (fetched from the npm registry)"
  );
}

/**
 * The note of the project at `root` when `execPath` is its own Node, else null. No try/catch: the
 * existence checks come first, so an old Node's parser never meets a syntax it lacks.
 */
function noteFor(root, execPath) {
  var p = paths(root);
  if (!fs.existsSync(execPath) || !fs.existsSync(p.binary) || !fs.existsSync(p.note)) return null;
  if (fs.realpathSync(execPath) !== fs.realpathSync(p.binary)) return null;
  return fs.readFileSync(p.note, "utf8").split("\n")[0] || null;
}

/** True when `file` exists and belongs to the user running this (the launcher's `[ -O ]`). */
function ours(file) {
  if (!fs.existsSync(file)) return false;
  return !process.getuid || fs.statSync(file).uid === process.getuid();
}

/** The headers directory of the Node in `pkg` (node-<platform>-<arch>/ beside it), for node-gyp, or null. */
function headersOf(pkg) {
  var dir = path.join(pkg, "node_modules");
  if (!fs.existsSync(dir)) return null;
  var names = fs.readdirSync(dir);
  for (var i = 0; i < names.length; i++) {
    var h = path.join(dir, names[i]);
    if (fs.existsSync(path.join(h, "include", "node", "node_version.h"))) return h;
  }
  return null;
}

module.exports = {
  DIR: DIR,
  paths: paths,
  noteLine: noteLine,
  noteFor: noteFor,
  ours: ours,
  headersOf: headersOf,
};
