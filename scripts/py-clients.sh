#!/usr/bin/env bash
# scripts/py-clients.sh — a Python virtual environment with the official clients motet-serve is
# tested against: `openai` (the OpenAI-compatible endpoint), `a2a-sdk` (A2A) and `selenium` (the
# web console, in Debian's headless chromium), pinned, from PyPI.
# Needs python3 (3.10 or later) with its venv module.
#
#   bash scripts/py-clients.sh install   make the venv (if missing or not as pinned) and print
#                                        its python's path
#   bash scripts/py-clients.sh env       print `export MOTET_PYTHON=...`
#
# The tests read MOTET_PYTHON (the path `install` prints) and run their client scripts with it;
# without it they skip, and under CI=true they fail.
#
# Settings (environment):
#   MOTET_PY_HOME   cache folder the venv is made in (default ~/.cache/motet-py)
set -euo pipefail

OPENAI=3.51.0
A2A_SDK=1.3.0
# 4.52.0 asks for a certifi newer than PyPI had when this was pinned.
SELENIUM=4.51.0
CACHE="${MOTET_PY_HOME:-$HOME/.cache/motet-py}"
VENV="$CACHE/clients-openai-$OPENAI-a2a-$A2A_SDK-selenium-$SELENIUM"
PYTHON="$VENV/bin/python"

say() { echo "[py-clients] $*" >&2; }
die() { say "$*"; exit 1; }

installed() {
  [ -x "$PYTHON" ] && "$PYTHON" - "$OPENAI" "$A2A_SDK" "$SELENIUM" >/dev/null 2>&1 <<'EOF'
import sys
from importlib.metadata import version
assert version("openai") == sys.argv[1], version("openai")
assert version("a2a-sdk") == sys.argv[2], version("a2a-sdk")
assert version("selenium") == sys.argv[3], version("selenium")
import openai, a2a, selenium.webdriver  # noqa: E401,F401 (each imports, not only installed)
EOF
}

install() {
  command -v python3 >/dev/null 2>&1 || die "python3 is not installed"
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "python3 has no venv module (install python3-venv)"
    apt-get update -q >/dev/null && apt-get install -y -q python3-venv >/dev/null
  fi
  if ! installed; then
    say "making $VENV with openai==$OPENAI, a2a-sdk==$A2A_SDK and selenium==$SELENIUM"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    python3 -m venv "$VENV" >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check \
      "openai==$OPENAI" "a2a-sdk==$A2A_SDK" "selenium==$SELENIUM" >&2
    installed || die "pip finished but $PYTHON cannot import openai $OPENAI, a2a-sdk $A2A_SDK and selenium $SELENIUM"
  fi
}

cmd="${1:-}"
case "$cmd" in
  install) install; echo "$PYTHON" ;;
  env) install; echo "export MOTET_PYTHON=$PYTHON" ;;
  -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
