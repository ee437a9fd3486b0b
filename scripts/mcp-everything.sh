#!/usr/bin/env bash
# scripts/mcp-everything.sh — the MCP reference server (@modelcontextprotocol/server-everything,
# from npm) for motet's MCP tests and example. Needs node (v18 or later) and npm.
#
#   bash scripts/mcp-everything.sh install          install the pinned version (if missing) and
#                                                   print its folder
#   bash scripts/mcp-everything.sh command          print the stdio command line
#   bash scripts/mcp-everything.sh serve-http PORT  run it in the foreground, Streamable HTTP on
#                                                   PORT (URL http://127.0.0.1:PORT/mcp)
#   bash scripts/mcp-everything.sh port             print a free loopback port
#   bash scripts/mcp-everything.sh env              print `export MOTET_MCP_EVERYTHING=...`
#
# The tests and examples read MOTET_MCP_EVERYTHING: the folder `install` prints. They start the
# stdio server themselves (`node $MOTET_MCP_EVERYTHING/dist/index.js stdio`) and the HTTP one
# through `serve-http`, which execs node so that the caller's child is the server itself.
#
# Settings (environment):
#   MOTET_MCP_HOME   cache folder the package is installed into (default ~/.cache/motet-mcp)
#
# The HTTP server listens on every interface (the package takes only PORT); it serves test
# fixtures only, but do not run it on a shared network.
set -euo pipefail

VERSION=2026.8.31
PACKAGE=@modelcontextprotocol/server-everything
CACHE="${MOTET_MCP_HOME:-$HOME/.cache/motet-mcp}"
PREFIX="$CACHE/server-everything-$VERSION"
DIR="$PREFIX/node_modules/$PACKAGE"

say() { echo "[mcp-everything] $*" >&2; }
die() { say "$*"; exit 1; }

installed() { [ -f "$DIR/dist/index.js" ] && grep -q "\"version\": \"$VERSION\"" "$DIR/package.json"; }

install() {
  command -v node >/dev/null 2>&1 || die "node is not installed (server-everything needs node 18 or later)"
  command -v npm >/dev/null 2>&1 || die "npm is not installed"
  if ! installed; then
    mkdir -p "$PREFIX"
    say "installing $PACKAGE@$VERSION into $PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "$PACKAGE@$VERSION" >&2
    installed || die "npm finished but $DIR/dist/index.js is missing"
  fi
}

cmd="${1:-}"
case "$cmd" in
  install) install; echo "$DIR" ;;
  command) install; echo "node $DIR/dist/index.js stdio" ;;
  serve-http)
    port="${2:-}"
    [ -n "$port" ] || die "usage: $0 serve-http PORT"
    # A folder the caller already installed (the tests pass theirs) is used as it is.
    if [ -n "${MOTET_MCP_EVERYTHING:-}" ] && [ -f "$MOTET_MCP_EVERYTHING/dist/index.js" ]; then
      DIR="$MOTET_MCP_EVERYTHING"
    else
      install
    fi
    PORT="$port" exec node "$DIR/dist/index.js" streamableHttp
    ;;
  port) python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' ;;
  env) install; echo "export MOTET_MCP_EVERYTHING=$DIR" ;;
  -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: $0 install|command|serve-http PORT|port|env" >&2; exit 2 ;;
esac
