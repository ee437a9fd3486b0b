#!/usr/bin/env bash
# The README's tour builds the examples (`cargo run --release --example ...`) and then the
# command line (`cargo run --release -p motet-cli`). Cargo compiles a dependency once per set of
# features, so if the examples' dev-dependencies turned on a feature of a crate the command line
# also uses, the second command would rebuild that crate and everything above it — six minutes
# once. This check fails when any crate the two builds share is resolved with different features.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
features() {
  cargo tree "$@" -f '{p} [{f}]' --prefix none --target "$host" --offline 2>/dev/null \
    || cargo tree "$@" -f '{p} [{f}]' --prefix none --target "$host"
}
examples=$(features -p motet -e normal,dev | grep -v '(\*)' | sort -u)
cli=$(features -p motet-cli -e normal | grep -v '(\*)' | sort -u)
# "name version: examples [...], command line [...]" for every crate both build, when they differ.
differ=$(join -t '|' -o 0,1.2,2.2 \
  <(printf '%s\n' "$examples" | sed 's/ \[/|[/' | sort -t '|' -k 1,1) \
  <(printf '%s\n' "$cli" | sed 's/ \[/|[/' | sort -t '|' -k 1,1) \
  | awk -F'|' '$2 != $3 {print $1 ": examples " $2 ", command line " $3}')
if [ -n "$differ" ]; then
  echo "same-features: the examples and the command line build these crates differently:" >&2
  printf '  %s\n' "$differ" >&2
  exit 1
fi
echo "same-features: the examples and the command line share every dependency's build"
