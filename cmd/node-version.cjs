// The Node.js line Familiar needs, checked before anything else runs: by `npm install` (the
// preinstall, cmd/node-bootstrap.cjs, fetches a newer Node into .node/ instead of refusing), `npm test`
// (pretest runs this file), and the `familiar` entry (cmd/familiar.ts) before it imports a module that
// loads a native addon.
//
// Why: on an older Node the native addons (better-sqlite3, sqlite-vec) and some dependencies crash the
// process with a bare "Segmentation fault" (exit 139) and no word about the cause. One line that
// names both versions and the fix is the only useful answer.
//
// Invariant: this file stays plain ES5 CommonJS that requires only Node built-ins and
// cmd/project-node.cjs (held to the same rule), so every Node that can start at all parses it and
// prints the line (the very old ones included).
"use strict";

var MIN_MAJOR = 22;
var MIN_MINOR = 22;

/**
 * The one-line refusal for Node `version` ("20.20.2", with or without the leading "v"), or null when
 * it is new enough.
 */
function refusal(version) {
  var parts = String(version).replace(/^v/, "").split(".");
  var major = parseInt(parts[0], 10) || 0;
  var minor = parseInt(parts[1], 10) || 0;
  if (major > MIN_MAJOR || (major === MIN_MAJOR && minor >= MIN_MINOR)) return null;
  return (
    "Familiar needs Node.js " +
    MIN_MAJOR +
    "." +
    MIN_MINOR +
    " or newer; this is " +
    String(version).replace(/^v/, "") +
    ". Run `npm install` (it fetches Node " +
    MIN_MAJOR +
    " from the npm registry into .node/ for `npm start`, `npm test` and `npm run familiar`)," +
    " or install it with `nvm install " +
    MIN_MAJOR +
    "` or from https://nodejs.org/en/download"
  );
}

module.exports = { refusal: refusal, MIN_MAJOR: MIN_MAJOR, MIN_MINOR: MIN_MINOR };

// Run directly (`node cmd/node-version.cjs`, the pretest): on the project's own Node (.node/, which npm
// puts first on PATH) print the one line that says so; exit 1 with the refusal on an old Node;
// silently 0 otherwise.
if (require.main === module) {
  var note = require("./project-node.cjs").noteFor(require("path").join(__dirname, ".."), process.execPath);
  var line = refusal(process.versions.node);
  if (line) {
    process.stderr.write(line + "\n");
    process.exit(1);
  }
  if (note) process.stderr.write(note + "\n");
}
