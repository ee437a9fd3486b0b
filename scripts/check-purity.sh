#!/usr/bin/env bash
# The pure crates decide; they never do IO. Their normal (non-dev) dependency trees must not
# contain an async runtime, an HTTP client or an actor system.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for crate in motet-signals motet-directives motet-agents; do
  tree=$(cargo tree -p "$crate" -e normal --prefix none --offline 2>/dev/null || cargo tree -p "$crate" -e normal --prefix none)
  bad=$(printf '%s\n' "$tree" | awk '{print $1}' | grep -E '^(tokio|reqwest|ractor|hyper|mio)$' | sort -u || true)
  if [ -n "$bad" ]; then
    echo "purity: $crate depends on: $(echo $bad)" >&2
    status=1
  else
    echo "purity: $crate ok"
  fi
done
exit $status
