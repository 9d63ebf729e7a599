#!/usr/bin/env bash
# Arize Phoenix in its own virtual environment (.cache/phoenix-venv): the real OTLP receiver that
# test/e2e/telemetry-phoenix.test.ts starts on loopback to check the daemon's exported traces.
# Pinned with everything it installs (scripts/pins/phoenix.txt); idempotent (a stamp holding the pins'
# hash skips the install). Called by scripts/setup-test-env.sh; PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PHOENIX_VERSION=20.26.1
VENV=${HARNESS_RL_PHOENIX_VENV:-.cache/phoenix-venv}
PINS=scripts/pins/phoenix.txt
STAMP="$VENV/.harness-rl-phoenix"
PY=${PYTHON:-python3}
stamp="arize-phoenix==$PHOENIX_VERSION $(sha256sum "$PINS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/phoenix" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$stamp" ]; then
  echo "setup-phoenix-venv: Phoenix $PHOENIX_VERSION is installed in $VENV" >&2
  exit 0
fi
echo "setup-phoenix-venv: installing arize-phoenix==$PHOENIX_VERSION into $VENV" >&2
t0=$(date +%s)
"$PY" -m venv "$VENV"
. scripts/pip-wheelhouse.sh
pip_install_pinned "$VENV/bin/python" "$PINS" "arize-phoenix==$PHOENIX_VERSION" >&2
echo "$stamp" >"$STAMP"
echo "setup-phoenix-venv: done in $(($(date +%s) - t0)) s" >&2
