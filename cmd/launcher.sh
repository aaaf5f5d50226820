#!/bin/sh
":" /*; n=node
# The head of dist/bundle/familiar.js (cmd/bundle.mjs puts it there): POSIX sh above, JavaScript
# below. To JavaScript these lines are a string statement and a comment; sh runs them and never reaches
# the end of the comment, since every path ends in `exec`. It applies the daemon's runtime settings of
# cmd/runtime-tuning.ts before Node starts, so the daemon started as `familiar run` (global install,
# npm link, systemd, a container) costs one Node start, not two. It mirrors tuningPlan() there; on
# anything it does not read the same way (an odd heap value), it starts Node plainly and the JS
# side decides, re-executing or naming the error. Runs under dash, BusyBox ash and bash: no bashisms.
# Which Node: the project's own (.node/bin/node beside dist/, fetched by `npm install` when the
# machine's Node is too old: cmd/node-bootstrap.cjs) with its one-line note on stderr, else `node` on
# PATH. A linked bin (npm link, a global install) is followed to the checkout first. Only a .node/
# owned by whoever runs this, like the Node it holds: one another user planted is never run.
s=$0
[ -L "$s" ] && s=$(readlink -f "$s" 2>/dev/null || echo "$0")
case $s in *[/]dist/bundle/*) r=${s%/dist/bundle/*} ;; dist/bundle/*) r=. ;; *) r= ;; esac
if [ -n "$r" ] && [ -x "$r/.node/bin/node" ] && [ -O "$r/.node" ] && [ -O "$r/.node/bin/node" ]; then
  n=$r/.node/bin/node
  [ -f "$r/.node/note" ] && IFS= read -r l <"$r/.node/note" && printf '%s\n' "$l" >&2
fi
[ "$FAMILIAR_TUNED" = 1 ] && exec "$n" "$0" "$@"
# Not the daemon (--version, doctor, chat ...): Node as it is.
case ${1-run} in -h | --help | -v | --version) exec "$n" "$0" "$@" ;; run | -*) ;; *) exec "$n" "$0" "$@" ;; esac
# The heap cap: --heap-mb N or --heap-mb=N (the last one wins), else FAMILIAR_HEAP_MB, else 96.
h=${FAMILIAR_HEAP_MB-96} p=
for a do
  [ "$p" = --heap-mb ] && h=$a
  case $a in --heap-mb) h= ;; --heap-mb=*) h=${a#--heap-mb=} ;; esac
  p=$a
done
case $h in
  0 | [1-9] | [1-9][0-9] | [1-9][0-9][0-9] | [1-9][0-9][0-9][0-9] | [1-9][0-9][0-9][0-9][0-9] | [1-9][0-9][0-9][0-9][0-9][0-9] | [1-9][0-9][0-9][0-9][0-9][0-9][0-9]) ;;
  *) exec "$n" "$0" "$@" ;;
esac
[ "$h" -ne 0 ] && { [ "$h" -lt 32 ] || [ "$h" -gt 1048576 ]; } && exec "$n" "$0" "$@"
# What the owner set wins: a flag in NODE_OPTIONS, a malloc variable already in the environment.
f=
case " $NODE_OPTIONS " in *[[:space:]]--max-old-space-size[[:space:]=]*) ;; *) [ "$h" -ne 0 ] && f="--max-old-space-size=$h" ;; esac
case " $NODE_OPTIONS " in *[[:space:]]--max-semi-space-size[[:space:]=]*) ;; *) f="$f --max-semi-space-size=2" ;; esac
MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX-2} MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_-131072} FAMILIAR_TUNED=1
export MALLOC_ARENA_MAX MALLOC_TRIM_THRESHOLD_ FAMILIAR_TUNED
exec "$n" $f "$0" "$@"
*/
