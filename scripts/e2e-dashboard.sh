#!/usr/bin/env bash
# End-to-end test of the web dashboard in headless Chromium: starts live jobs (skew, the
# under-provisioned scenario, the blocking scenario as is and with its async fix), drives the dashboard with playwright-core (installed into target/e2e
# by npm if missing; never downloads a browser: it uses Debian's /usr/bin/chromium) and saves a
# screenshot per scenario under target/e2e/. Requires node, npm and /usr/bin/chromium: without
# them it fails under CI=true and skips loudly elsewhere (scripts/lib/require.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/require.sh

E2E=target/e2e
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PORT=${E2E_PORT:-18082}
[ -x "$CHROMIUM" ] || require_or_skip "the browser" "no $CHROMIUM (apt-get install chromium)"
command -v node >/dev/null || require_or_skip "the browser driver" "node is not installed"
command -v npm >/dev/null || require_or_skip "the browser driver" "npm is not installed"

mkdir -p "$E2E"
if [ ! -f "$E2E/node_modules/playwright-core/package.json" ]; then
  [ -f "$E2E/package.json" ] || echo '{"private":true}' > "$E2E/package.json"
  (cd "$E2E" && npm install --no-audit --no-fund --silent playwright-core@1) ||
    require_or_skip "the browser driver" "npm install playwright-core@1 failed"
fi
# SLUICE_BIN: a sluice binary built elsewhere (e.g. a release build); else the debug build.
SLUICE=${SLUICE_BIN:-target/debug/sluice}
[ -n "${SLUICE_BIN:-}" ] || [ -x "$SLUICE" ] || cargo build -q -p sluice-cli

JOB_PID=
stop_job() {
  if [ -n "$JOB_PID" ]; then
    kill "$JOB_PID" 2>/dev/null || true
    wait "$JOB_PID" 2>/dev/null || true
    JOB_PID=
  fi
  # The next case uses the same port: it must not reach this job's REST API.
  local deadline=$((SECONDS + 30))
  while curl -fs "http://127.0.0.1:$PORT/overview" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "port $PORT still answers 30 s after the job was stopped"; exit 1; }
    sleep 0.2
  done
}
trap stop_job EXIT

run_case() { # scenario, then the `sluice run` arguments
  local scenario=$1; shift
  # E2E_CASES="sql skew": only these scenarios (all by default).
  if [ -n "${E2E_CASES:-}" ] && [[ " $E2E_CASES " != *" $scenario "* ]]; then return 0; fi
  echo "== dashboard e2e: $scenario"
  "$SLUICE" run "$@" --rest-port "$PORT" --metrics-interval 0.2 --metrics-window 1 \
    --no-progress >"$E2E/$scenario.log" 2>&1 &
  JOB_PID=$!
  # Poll the REST API until it answers (up to a minute: a loaded machine starts the job late).
  local deadline=$((SECONDS + 60))
  until curl -fs "http://127.0.0.1:$PORT/jobs/overview" >/dev/null 2>&1; do
    kill -0 "$JOB_PID" 2>/dev/null || { echo "sluice exited:"; cat "$E2E/$scenario.log"; exit 1; }
    [ "$SECONDS" -lt "$deadline" ] || { echo "the REST API did not answer within 60 s"; exit 1; }
    sleep 0.2
  done
  local rc=0
  SLUICE_URL="http://127.0.0.1:$PORT" SCENARIO="$scenario" E2E_OUT="$E2E" CHROMIUM="$CHROMIUM" \
    PLAYWRIGHT_CORE="$PWD/$E2E/node_modules/playwright-core" \
    timeout 600 node tests/e2e/dashboard.test.mjs || rc=$?
  stop_job
  return "$rc"
}

# A SQL job (the official Nexmark generator, a window aggregation): its EXPLAIN ANALYZE panel.
cat >"$E2E/explain.sql" <<'SQL'
CREATE TABLE datagen (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
        state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,
        reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,
        category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
        `dateTime` TIMESTAMP(3), extra VARCHAR>,
    `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime`
        WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'first-event.rate' = '100000', 'next-event.rate' = '100000',
        'events.num' = '100000000000');
CREATE TABLE counts (auction BIGINT, num BIGINT, window_end TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO counts
SELECT bid.auction, COUNT(*), window_end
FROM TABLE(TUMBLE(TABLE datagen, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND))
WHERE event_type = 2
GROUP BY bid.auction, window_start, window_end;
SQL
run_case sql sql -f "$E2E/explain.sql" -p 2
run_case skew skew --records 100000000000 -p 2 --checkpoint-interval 500
# The same job over two local processes: process 0's dashboard shows every subtask.
run_case skew-processes skew --records 100000000000 -p 2 --processes 2
# --autopilot: the dashboard's timeline of changes shows its decisions.
run_case under-provisioned scenario under-provisioned -p 2 --autopilot
# A sync lookup (the doctor's "blocking calls" and its async fix), then the same job with the fix applied.
run_case blocking scenario blocking -p 2
run_case blocking-fixed scenario blocking -p 2 --async-capacity blocking-call=16
