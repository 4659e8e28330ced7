#!/usr/bin/env bash
# The whole test suite: every Rust test, then the REST API fuzzed from its own OpenAPI document.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
scripts/fuzz-rest.sh
