#!/usr/bin/env bash
# scripts/test.sh — the whole test suite against real servers: what the README's second command
# runs, and what CI runs (.ci/run). It starts, fetching what is missing, every server the
# end-to-end tests need — the local llama.cpp model, the MCP reference server, PostgreSQL and
# NATS JetStream, each on a free loopback port, the official Python clients (`openai`,
# `a2a-sdk`) and selenium with Debian's headless chromium that the serve tests drive — runs
# `cargo test --workspace` with their URLs (extra arguments go to cargo test), and stops them
# again however it ends. The web console's screenshots are kept in MOTET_ARTIFACTS (default
# target/artifacts).
#
#   bash scripts/test.sh                 every test, nothing skipped for want of a server
#   bash scripts/test.sh -p motet-cli    one crate's tests, the servers started all the same
#
# A server named by its variable already (MOTET_LOCAL_LLM_URL, MOTET_MCP_EVERYTHING,
# MOTET_DATABASE_URL, MOTET_NATS_URL, MOTET_PYTHON, MOTET_CHROMIUM, MOTET_CHROMEDRIVER) is used
# as it is. Under CI=true every download and install step runs into an empty cache on every run
# (a cache once hid a broken install step); elsewhere the caches under ~/.cache are kept, so a
# second run starts in seconds. The first run builds llama.cpp (about 8 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n=== %s (%ss)\n' "$1" "$SECONDS"; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
fresh=false
[ "${CI:-}" = true ] && fresh=true

# What this run started is stopped, and the folders it made removed, however it ends.
started=()
made=()
cleanup() {
  for server in "${started[@]}"; do bash "scripts/$server.sh" stop >/dev/null 2>&1 || true; done
  for folder in "${made[@]}"; do rm -rf "$folder"; done
}
trap cleanup EXIT
scratch() { local folder; folder="$(mktemp -d)"; made+=("$folder"); echo "$folder"; }

section "local llm"
if [ -z "${MOTET_LOCAL_LLM_URL:-}" ]; then
  if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 \
    && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -q g++ >/dev/null
  fi
  export MOTET_LLM_HOME MOTET_LLM_BUILDS MOTET_LLM_PORT
  if $fresh; then
    # Only the built server is reused, kept by llama.cpp version, CPU level and recipe.
    MOTET_LLM_BUILDS="${MOTET_LLM_BUILDS:-$HOME/.cache/motet-llm/builds}"
    MOTET_LLM_HOME="$(scratch)"
  fi
  # A port nobody listens on, so a server left running elsewhere is never mistaken for ours.
  MOTET_LLM_PORT="$(free_port)"
  bash scripts/local-llm.sh fetch
  started+=(local-llm)
  MOTET_LOCAL_LLM_URL="$(bash scripts/local-llm.sh start)"
  export MOTET_LOCAL_LLM_URL
fi
echo "local llm at $MOTET_LOCAL_LLM_URL"

section "mcp server"
if [ -z "${MOTET_MCP_EVERYTHING:-}" ]; then
  if { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; } \
    && command -v apt-get >/dev/null 2>&1; then
    apt-get update -q >/dev/null && apt-get install -y -q nodejs npm >/dev/null
  fi
  export MOTET_MCP_HOME
  if $fresh; then MOTET_MCP_HOME="$(scratch)"; fi
  MOTET_MCP_EVERYTHING="$(bash scripts/mcp-everything.sh install)"
  export MOTET_MCP_EVERYTHING
fi
echo "server-everything at $MOTET_MCP_EVERYTHING"

section "postgres"
if [ -z "${MOTET_DATABASE_URL:-}" ]; then
  # Each start is a fresh initdb into this folder, deleted again by stop.
  export MOTET_PG_HOME MOTET_PG_PORT
  MOTET_PG_HOME="$(scratch)"
  MOTET_PG_PORT="$(free_port)"
  bash scripts/postgres.sh fetch
  started+=(postgres)
  MOTET_DATABASE_URL="$(bash scripts/postgres.sh start)"
  export MOTET_DATABASE_URL
fi
echo "postgres at $MOTET_DATABASE_URL"

section "nats"
if [ -z "${MOTET_NATS_URL:-}" ]; then
  # MOTET_NATS_HOME stays exported: the restart test restarts this server through the script.
  export MOTET_NATS_HOME
  if $fresh || [ -z "${MOTET_NATS_HOME:-}" ]; then MOTET_NATS_HOME="$(scratch)"; fi
  bash scripts/nats.sh fetch
  started+=(nats)
  MOTET_NATS_URL="$(bash scripts/nats.sh start)"
  export MOTET_NATS_URL
fi
echo "nats at $MOTET_NATS_URL"

section "python clients"
if [ -z "${MOTET_PYTHON:-}" ]; then
  # The official `openai` and `a2a-sdk` packages, pinned, in a venv the serve tests run.
  export MOTET_PY_HOME
  if $fresh; then MOTET_PY_HOME="$(scratch)"; fi
  MOTET_PYTHON="$(bash scripts/py-clients.sh install)"
  export MOTET_PYTHON
fi
echo "python clients at $MOTET_PYTHON"

section "browser"
if [ -z "${MOTET_CHROMIUM:-}" ] || [ -z "${MOTET_CHROMEDRIVER:-}" ]; then
  # Debian's chromium and its driver, for the web console's test (selenium drives them).
  if { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; } \
    && command -v apt-get >/dev/null 2>&1; then
    apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null
  fi
  MOTET_CHROMIUM="${MOTET_CHROMIUM:-$(command -v chromium || true)}"
  MOTET_CHROMEDRIVER="${MOTET_CHROMEDRIVER:-$(command -v chromedriver || true)}"
  export MOTET_CHROMIUM MOTET_CHROMEDRIVER
fi
echo "chromium at ${MOTET_CHROMIUM:-(none)}, chromedriver at ${MOTET_CHROMEDRIVER:-(none)}"
# The console test's screenshots, kept after the run (serve/tests/console.rs).
export MOTET_ARTIFACTS="${MOTET_ARTIFACTS:-${CARGO_TARGET_DIR:-$PWD/target}/artifacts}"

section "tests"
# Every server above is up, so no test has a reason to skip; under CI=true one that would
# fails instead.
# `-p CRATE` narrows the run to those crates (cargo's --workspace would override it).
scope=(--workspace)
for arg in "$@"; do
  case "$arg" in -p | --package | -p* | --package=*) scope=() ;; esac
done
cargo test "${scope[@]}" "$@"
