#!/usr/bin/env bash
# Flink's own web dashboard on Sluice's REST API, in headless Chromium: the dashboard's files come
# from the pinned Flink package (the `web/` folder of flink-dist-2.3.0.jar in PyPI's
# apache-flink-libraries, extracted into target/e2e/flink-web at test time, never committed);
# tests/e2e/flink-dashboard.test.mjs serves them and passes every other request to a live
# `sluice run skew` job, then checks the start page (the job listed as an application), the job
# graph, the BackPressure and the FlameGraph tabs (screenshots under target/e2e/). Requires node, npm, /usr/bin/chromium and the Flink package:
# without them it fails under CI=true and skips loudly elsewhere (scripts/lib/require.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/require.sh

E2E=target/e2e
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PORT=${E2E_FLINK_PORT:-18083}
[ -x "$CHROMIUM" ] || require_or_skip "the browser" "no $CHROMIUM (apt-get install chromium)"
command -v node >/dev/null || require_or_skip "the browser driver" "node is not installed"
command -v npm >/dev/null || require_or_skip "the browser driver" "npm is not installed"
FLINK_LIB=$(python3 -c 'import pyflink, os; print(os.path.join(list(pyflink.__path__)[0], "lib"))' 2>/dev/null) ||
  require_or_skip "Flink's web dashboard" "the Flink package is not installed (pip install apache-flink-libraries==2.3.0)"
JAR="$FLINK_LIB/flink-dist-2.3.0.jar"
[ -f "$JAR" ] || require_or_skip "Flink's web dashboard" "no $JAR"

mkdir -p "$E2E"
if [ ! -f "$E2E/node_modules/playwright-core/package.json" ]; then
  [ -f "$E2E/package.json" ] || echo '{"private":true}' > "$E2E/package.json"
  (cd "$E2E" && npm install --no-audit --no-fund --silent playwright-core@1) ||
    require_or_skip "the browser driver" "npm install playwright-core@1 failed"
fi

# The dashboard's files, extracted once per jar (its path and size name the extraction).
WEB="$E2E/flink-web"
STAMP="$JAR $(stat -c %s "$JAR")"
if [ "$(cat "$WEB/.from" 2>/dev/null)" != "$STAMP" ]; then
  rm -rf "$WEB" && mkdir -p "$WEB"
  python3 - "$JAR" "$WEB" <<'PY'
import sys, zipfile
jar, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(jar) as z:
    names = [n for n in z.namelist() if n.startswith("web/")]
    if not any(n == "web/index.html" for n in names):
        sys.exit(f"{jar} holds no web/index.html")
    z.extractall(out, names)
PY
  echo "$STAMP" > "$WEB/.from"
fi
[ -x target/debug/sluice ] || cargo build -q -p sluice-cli

JOB_PID=
stop_job() {
  if [ -n "$JOB_PID" ]; then
    kill "$JOB_PID" 2>/dev/null || true
    wait "$JOB_PID" 2>/dev/null || true
    JOB_PID=
  fi
}
trap stop_job EXIT

echo "== Flink's dashboard on Sluice: skew"
target/debug/sluice run skew --records 100000000000 -p 2 --rest-port "$PORT" --metrics-interval 0.2 \
  --metrics-window 1 --no-progress >"$E2E/flink-dashboard-job.log" 2>&1 &
JOB_PID=$!
# Poll the REST API until it answers (up to a minute: a loaded machine starts the job late).
deadline=$((SECONDS + 60))
until curl -fs "http://127.0.0.1:$PORT/jobs/overview" >/dev/null 2>&1; do
  kill -0 "$JOB_PID" 2>/dev/null || { echo "sluice exited:"; cat "$E2E/flink-dashboard-job.log"; exit 1; }
  [ "$SECONDS" -lt "$deadline" ] || { echo "the REST API did not answer within 60 s"; exit 1; }
  sleep 0.2
done
SLUICE_URL="http://127.0.0.1:$PORT" FLINK_WEB="$PWD/$WEB/web" E2E_OUT="$E2E" CHROMIUM="$CHROMIUM" \
  PLAYWRIGHT_CORE="$PWD/$E2E/node_modules/playwright-core" \
  timeout 600 node tests/e2e/flink-dashboard.test.mjs
