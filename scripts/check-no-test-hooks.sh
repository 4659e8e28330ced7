#!/usr/bin/env bash
# Checks that a `sluice` binary built without test features carries no test hook: every
# `SLUICE_*` environment variable name in it must be one a user may set (the allowlist below),
# and the Kafka sink's crash-window hook (sluice-kafka's `fault-injection` feature, which only
# test builds enable) must be absent. Usage: scripts/check-no-test-hooks.sh [BINARY]
# (default: the debug `sluice` that `cargo build -p sluice-cli` leaves; works on a release one).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${1:-${CARGO_TARGET_DIR:-target}/debug/sluice}"
[ -f "$BIN" ] || { echo "check-no-test-hooks: no binary at $BIN" >&2; exit 1; }

# Environment variables the production binary reads on purpose: the REST token (a flag's
# default), the PID the multi-process launcher hands its children, the Python with DuckDB that
# `sluice nexmark --sql --verify` runs (docs/src/guide/sql.md) and the folder where the official
# runner writes q13's side input (`${FLINK_HOME}`). Matched as prefixes:
# string constants sit back to back in the binary, so a name may run into the next string.
ALLOWED='^(SLUICE_REST_TOKEN|SLUICE_LAUNCHER_PID|SLUICE_PYTHON|SLUICE_NEXMARK_HOME)'

# Split runs of names too (`SLUICE_ASLUICE_B`), so no name hides behind an allowed one.
found="$(grep -aoE 'SLUICE_[A-Z0-9_]+' "$BIN" | sed 's/SLUICE_/\nSLUICE_/g' | sed '/^$/d' | sort -u || true)"
unexpected="$(grep -vE "$ALLOWED" <<<"$found" | sed '/^$/d' || true)"
status=0
if [ -n "$unexpected" ]; then
  echo "check-no-test-hooks: $BIN names environment variables no user sets:" >&2
  sed 's/^/  /' <<<"$unexpected" >&2
  echo "  (a test hook must sit behind a cargo feature only test builds enable; a variable" >&2
  echo "  meant for users belongs in ALLOWED in $0)" >&2
  status=1
fi
if grep -aqF -e 'KILL_BEFORE_COMMIT' -e 'fault injection: SIGKILL' "$BIN"; then
  echo "check-no-test-hooks: $BIN contains the Kafka sink's SIGKILL hook (fault-injection feature)" >&2
  status=1
fi
[ "$status" = 0 ] && echo "check-no-test-hooks: $BIN has no test hook"
exit "$status"
