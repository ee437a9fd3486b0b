#!/usr/bin/env bash
# scripts/postgres.sh — a throwaway PostgreSQL server on loopback for motet's PostgresStore tests
# and benchmarks. Each start runs `initdb` into a fresh data folder, starts the server on a free
# loopback port with trust authentication for a superuser `motet`, creates the database `motet`
# and prints its URL; stop shuts it down and deletes the folder.
#
#   bash scripts/postgres.sh fetch          install the PostgreSQL server where none is (Debian's
#                                           `postgresql` package through apt-get); CI runs it on
#                                           every run
#   bash scripts/postgres.sh start [PORT]   start (fetching what is missing), wait, print the URL
#   bash scripts/postgres.sh stop [PORT]    stop the server this script started, delete its data
#   bash scripts/postgres.sh status [PORT]  print the URL if it answers (exit 1 if not)
#   bash scripts/postgres.sh env [PORT]     print the `export MOTET_DATABASE_URL=...` line
#
# The URL is postgres://motet@127.0.0.1:PORT/motet. Tests make a database of their own in it.
#
# Why apt: the machines this project runs on are Debian with apt-get as root, and Debian's
# `postgresql` package is the server as its distribution ships it (initdb, pg_ctl, postgres).
# Without apt (or as a user who may not install), install PostgreSQL by other means and put its
# bin folder in MOTET_PG_BIN.
#
# PostgreSQL refuses to run as root. As root the server runs as the `postgres` user the Debian
# package creates (through runuser), and its data folder is owned by that user.
#
# Settings (environment):
#   MOTET_PG_HOME   where the run files (pid, log, the data folder's name) live
#                   (default ~/.cache/motet-pg)
#   MOTET_PG_PORT   port (a PORT argument wins; default: the port of the server this script
#                   started, or a free one)
#   MOTET_PG_BIN    folder holding initdb and pg_ctl (default: the newest
#                   /usr/lib/postgresql/*/bin, or PATH)
set -euo pipefail

CACHE="${MOTET_PG_HOME:-$HOME/.cache/motet-pg}"
RUN="$CACHE/run"
HOST=127.0.0.1
DB_USER=motet
DB_NAME=motet

cmd="${1:-start}"
case "$cmd" in
  start | stop | status | env | fetch) [ $# -gt 0 ] && shift ;;
  -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 fetch|start|stop|status|env [PORT]" >&2; exit 2 ;;
esac

say() { echo "[postgres] $*" >&2; }
die() { say "$*"; exit 1; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The port: the argument, MOTET_PG_PORT, the one our last start used, or (start only) a free one.
PORT="${1:-${MOTET_PG_PORT:-}}"
if [ -z "$PORT" ] && [ -f "$RUN/last-port" ]; then PORT="$(cat "$RUN/last-port")"; fi
if [ -z "$PORT" ]; then
  if [ "$cmd" = start ]; then PORT="$(free_port)"; else PORT=5432; fi
fi
URL="postgres://$DB_USER@$HOST:$PORT/$DB_NAME"
PIDFILE="$RUN/server-$PORT.pid"
DATAFILE="$RUN/server-$PORT.data"
LOG="$RUN/server-$PORT.log"

pg_bin() {  # the folder with initdb and pg_ctl, or nothing
  if [ -n "${MOTET_PG_BIN:-}" ]; then echo "$MOTET_PG_BIN"; return 0; fi
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; fi
}

# Installs the server through apt-get. Runs on every CI run (an installed package makes it a
# quick check), so a broken install step shows at once rather than on the next new machine.
fetch() {
  if [ -n "${MOTET_PG_BIN:-}" ]; then
    [ -x "$MOTET_PG_BIN/initdb" ] || die "MOTET_PG_BIN=$MOTET_PG_BIN has no initdb"
    say "using PostgreSQL from $MOTET_PG_BIN"
    return 0
  fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing Debian's postgresql package (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends postgresql >/dev/null 2>&1; then
      apt-get update -q >/dev/null
      apt-get install -y -q --no-install-recommends postgresql >/dev/null
    fi
  fi
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] || die "no PostgreSQL server found and apt-get cannot install one here (set MOTET_PG_BIN)"
  say "PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') in $bin"
}

# Runs a command as the server's user: `postgres` when we are root, ourselves otherwise.
as_server() {
  if [ "$(id -u)" = 0 ]; then
    getent passwd postgres >/dev/null || useradd --system --no-create-home postgres
    # From /: the caller's folder may be one `postgres` cannot enter.
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

answers() {  # exit 0 when the server accepts connections
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] && [ -x "$bin/pg_isready" ] || return 1
  "$bin/pg_isready" -q -h "$HOST" -p "$PORT" -U "$DB_USER" -d "$DB_NAME" -t 2
}

ours_running() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q postgres
}

start() {
  if ours_running && answers; then echo "$URL"; return 0; fi
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] || fetch
  bin="$(pg_bin)"
  if python3 -c 'import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$PORT"; then
    die "something else is listening on port $PORT"
  fi
  mkdir -p "$RUN"
  # The data folder lives in the temp folder, not under $HOME: as root the server runs as
  # `postgres`, which may not enter /root.
  local data; data="$(mktemp -d "${TMPDIR:-/tmp}/motet-pg-$PORT.XXXXXX")"
  echo "$data" >"$DATAFILE"
  chmod 700 "$data"
  [ "$(id -u)" = 0 ] && chown postgres: "$data"
  say "initdb into $data"
  as_server "$bin/initdb" -D "$data" -U "$DB_USER" --auth=trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$LOG" 2>&1 || { tail -20 "$LOG" >&2; die "initdb failed (log: $LOG)"; }
  say "starting PostgreSQL on $HOST:$PORT (log: $LOG)"
  # The socket goes into the data folder: the default /var/run/postgresql may not exist.
  as_server "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-c listen_addresses=$HOST -p $PORT -k $data -c max_connections=200" start >>"$LOG" 2>&1 \
    || { cat "$data/server.log" >&2 2>/dev/null || true; die "pg_ctl start failed (log: $LOG)"; }
  head -1 "$data/postmaster.pid" >"$PIDFILE"
  echo "$PORT" >"$RUN/last-port"
  "$bin/createdb" -h "$HOST" -p "$PORT" -U "$DB_USER" "$DB_NAME" >>"$LOG" 2>&1 \
    || die "createdb failed (log: $LOG)"
  answers || die "no answer from $URL"
  echo "$URL"
}

stop() {
  if ! ours_running; then say "no server of ours on port $PORT"; rm -f "$PIDFILE"; return 0; fi
  local bin data; bin="$(pg_bin)"; data="$(cat "$DATAFILE")"
  as_server "$bin/pg_ctl" -D "$data" -m fast -w -t 30 stop >>"$LOG" 2>&1 || {
    local pid; pid="$(cat "$PIDFILE")"
    kill -9 "$pid" 2>/dev/null || true
  }
  rm -rf "$data"
  rm -f "$PIDFILE" "$DATAFILE" "$RUN/last-port"
  say "stopped"
}

case "$cmd" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  status) answers && echo "$URL" ;;
  env) echo "export MOTET_DATABASE_URL=$URL" ;;
esac
