#!/usr/bin/env bash
# Fuzzes the REST API of a running Sluice job from /openapi.json with schemathesis: every
# generated request must get an answer that is not a server error (5xx) and matches the schema.
# Installs schemathesis (pinned) into target/venv-schemathesis on first use. The job runs with
# --keep-rest so that a fuzzed PATCH (cancel) does not take the server down with the job.
# Without python3 or schemathesis it fails under CI=true and skips loudly elsewhere
# (scripts/lib/require.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/require.sh

VENV=target/venv-schemathesis
if [ ! -x "$VENV/bin/schemathesis" ]; then
  command -v python3 >/dev/null || require_or_skip "the REST fuzzer (schemathesis)" "python3 is not installed"
  { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "schemathesis==4.32.5"; } ||
    require_or_skip "the REST fuzzer (schemathesis)" "installing schemathesis==4.32.5 into $VENV failed"
fi

cargo build -q -p sluice-cli
PORT="${SLUICE_FUZZ_PORT:-18081}"
LOG=target/fuzz-rest-job.log
target/debug/sluice run skew --records 100000000000 --rest-port "$PORT" \
  --metrics-interval 0.5 --metrics-window 2.5 --keep-rest --no-progress >"$LOG" 2>&1 &
JOB=$!
trap 'kill "$JOB" 2>/dev/null || true; wait "$JOB" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if curl -sf "http://127.0.0.1:$PORT/overview" >/dev/null; then break; fi
  sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/overview" >/dev/null || { echo "REST server did not come up"; cat "$LOG"; exit 1; }

"$VENV/bin/schemathesis" run "http://127.0.0.1:$PORT/openapi.json" \
  --checks not_a_server_error \
  --max-examples "${SLUICE_FUZZ_EXAMPLES:-25}" \
  --report-dir target/schemathesis
echo "REST fuzzing: no server error"
