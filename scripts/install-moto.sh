#!/usr/bin/env bash
# Installs moto's standalone server (an S3-compatible HTTP server, from PyPI, pinned) into
# target/venv-moto for the checkpoint tests on object storage (crates/testkit/src/s3.rs starts
# and stops it by PID). Prints the path of its `moto_server` executable.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=5.2.5
VENV=target/venv-moto
BIN=$VENV/bin/moto_server

if [ ! -x "$BIN" ] || ! "$VENV/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$VERSION')" 2>/dev/null; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "moto[server]==${VERSION}" >&2
fi
echo "$PWD/$BIN"
