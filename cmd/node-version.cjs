// The Node.js line Familiar needs, checked before anything else runs: by `npm install` and `npm test`
// (package.json preinstall / pretest run this file), and by the `familiar` entry (cmd/familiar.ts)
// before it imports a module that loads a native addon.
//
// Why: on an older Node the native addons (better-sqlite3, sqlite-vec) and some dependencies crash the
// process with a bare "Segmentation fault" (exit 139) and no word about the cause. One line that
// names both versions and the fix is the only useful answer.
//
// Invariant: this file stays plain ES5 CommonJS with no imports, so every Node that can start at all
// parses it and prints the line (the very old ones included).
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
    ". Install it with `nvm install 22` (or `fnm install 22`), or from https://nodejs.org/en/download"
  );
}

module.exports = { refusal: refusal, MIN_MAJOR: MIN_MAJOR, MIN_MINOR: MIN_MINOR };

// Run directly (`node cmd/node-version.cjs`): exit 1 with the line on an old Node, silently 0 otherwise.
if (require.main === module) {
  var line = refusal(process.versions.node);
  if (line) {
    process.stderr.write(line + "\n");
    process.exit(1);
  }
}
