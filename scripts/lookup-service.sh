#!/usr/bin/env bash
# Starts or stops the lookup test service (sluice-lookup-service: JSON rows by key over HTTP,
# GET /lookup/{key}, /stats) on loopback, by PID:
#   scripts/lookup-service.sh start [PORT] [FLAGS...]   (default 8089; prints the URL template)
#   scripts/lookup-service.sh stop
# FLAGS: --keys N, --latency 10ms | uniform:5ms..15ms | exp:10ms, --error-rate R, --drop-rate R,
#        --stall-rate R --stall 5s, --fail-first N, --seed S.
# Tests start their own (sluice_testkit::LookupService).
set -euo pipefail
cd "$(dirname "$0")/.."
PIDFILE=target/lookup-service.pid
case "${1:-}" in
  start)
    PORT=${2:-8089}
    shift $(( $# >= 2 ? 2 : 1 ))
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "lookup-service.sh: already running (pid $(cat "$PIDFILE"))" >&2; exit 1
    fi
    cargo build -q -p sluice-lookup-service --bin sluice-lookup-service
    target/debug/sluice-lookup-service --port "$PORT" "$@" >target/lookup-service.log 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
      if grep -q "listening on" target/lookup-service.log 2>/dev/null; then
        echo "http://127.0.0.1:$PORT/lookup/{key}"; exit 0
      fi
      kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { cat target/lookup-service.log >&2; rm -f "$PIDFILE"; exit 1; }
      sleep 0.1
    done
    echo "lookup-service.sh: not listening on 127.0.0.1:$PORT after 10 s; see target/lookup-service.log" >&2; exit 1;;
  stop)
    [ -f "$PIDFILE" ] && kill "$(cat "$PIDFILE")" 2>/dev/null || true
    rm -f "$PIDFILE";;
  *) echo "usage: scripts/lookup-service.sh start [PORT] [FLAGS...] | stop" >&2; exit 2;;
esac
