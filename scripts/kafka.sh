#!/usr/bin/env bash
# Starts or stops a local Kafka-compatible broker (tansu, memory storage) on loopback, by PID:
#   scripts/kafka.sh start [PORT]   (default 9092; prints the bootstrap address)
#   scripts/kafka.sh stop
# Memory storage: a restarted broker is empty. Tests start their own brokers (sluice-testkit).
set -euo pipefail
cd "$(dirname "$0")/.."
PIDFILE=target/kafka.pid
case "${1:-}" in
  start)
    PORT=${2:-9092}
    BIN=$(scripts/install-tansu.sh)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "kafka.sh: a broker is already running (pid $(cat "$PIDFILE"))" >&2; exit 1
    fi
    "$BIN" broker --listener-url "tcp://127.0.0.1:$PORT" --advertised-listener-url "tcp://127.0.0.1:$PORT" \
      --storage-engine memory://tansu/ >target/kafka.log 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then echo "127.0.0.1:$PORT"; exit 0; fi
      kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { echo "kafka.sh: broker exited; see target/kafka.log" >&2; exit 1; }
      sleep 0.1
    done
    echo "kafka.sh: broker not listening on 127.0.0.1:$PORT after 10 s; see target/kafka.log" >&2; exit 1;;
  stop)
    [ -f "$PIDFILE" ] && kill "$(cat "$PIDFILE")" 2>/dev/null || true
    rm -f "$PIDFILE";;
  *) echo "usage: scripts/kafka.sh start [PORT] | stop" >&2; exit 2;;
esac
