#!/bin/sh
# `npm start` and `npm run familiar` (package.json): the built bin, or one line saying why it is not
# there, instead of sh's "./dist/bundle/familiar.js: not found" or Node's stack trace. The bin's own
# head (cmd/launcher.sh) picks the Node: the project's .node/ when `npm install` fetched one.
b=$(dirname "$0")/../dist/bundle/familiar.js
if [ ! -f "$b" ]; then
  echo "familiar: dist/bundle/familiar.js is missing: \`npm install\` builds it (see its last lines if it stopped), or \`npm run build\`" >&2
  exit 1
fi
exec "$b" "$@"
