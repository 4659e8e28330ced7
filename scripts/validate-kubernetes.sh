#!/usr/bin/env bash
# Checks deploy/kubernetes/*.yaml offline against Kubernetes' own schemas (kubernetes-validate,
# pinned, strict: an unknown field fails). Installs it into target/venv-k8s on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/venv-k8s
if ! "$VENV/bin/kubernetes-validate" --version >/dev/null 2>&1; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "kubernetes-validate==1.37.0"
fi
"$VENV/bin/kubernetes-validate" --strict --quiet deploy/kubernetes/*.yaml
echo "deploy/kubernetes: every manifest validates against its default Kubernetes schemas (kubernetes-validate $("$VENV/bin/kubernetes-validate" --version | awk "{print \$NF}"))"
