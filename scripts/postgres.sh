#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL cluster under target/postgres/ on loopback, by PID:
#   scripts/postgres.sh start [PORT]   (default 5432; prints a connection URL; user `sluice`, db `sluice`)
#   scripts/postgres.sh stop           (stops it and deletes the cluster)
# Debian's `postgresql` package provides the binaries; PostgreSQL refuses to run as root, so as root
# the cluster belongs to the `postgres` user. Tests start their own clusters (sluice-testkit).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=$PWD/target/postgres
PIDFILE=target/postgres.pid
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$BIN" ] || { echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_owner() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups "$@"; else "$@"; fi; }
case "${1:-}" in
  start)
    PORT=${2:-5432}
    rm -rf "$DIR"; mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
    as_owner "$BIN/initdb" -D "$DIR/data" -U sluice --auth=trust -E UTF8 >target/postgres-initdb.log 2>&1
    as_owner "$BIN/postgres" -D "$DIR/data" -p "$PORT" -k "$DIR" -c listen_addresses=127.0.0.1 \
      -c max_prepared_transactions=64 >target/postgres.log 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
      if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
        as_owner "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U sluice sluice 2>/dev/null || true
        echo "postgres://sluice@127.0.0.1:$PORT/sluice"; exit 0
      fi
      sleep 0.1
    done
    echo "postgres.sh: not ready on 127.0.0.1:$PORT after 10 s; see target/postgres.log" >&2; exit 1;;
  stop)
    if [ -f "$PIDFILE" ]; then
      PID=$(cat "$PIDFILE"); kill -INT "$PID" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$PIDFILE"; rm -rf "$DIR";;
  *) echo "usage: scripts/postgres.sh start [PORT] | stop" >&2; exit 2;;
esac
