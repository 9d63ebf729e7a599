#!/usr/bin/env bash
# Ray for the Ray-worker tests and bench: its own venv .cache/ray-venv (Python 3.10+) with the pinned
# ray[default] and this repository's worker package (workers/python) installed in it. Idempotent: a
# venv that already has both at these versions is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
RAY_VERSION=2.60.0
VENV=.cache/ray-venv
log() { echo "setup-ray: $*" >&2; }
stamp="$RAY_VERSION $(sha256sum workers/python/pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$stamp" ]; then
  log "ready ($VENV)"
  exit 0
fi
PY=$(command -v python3.11 || command -v python3)
log "creating $VENV with ray[default]==$RAY_VERSION and harness-rl-worker"
mkdir -p .cache
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q "ray[default]==$RAY_VERSION" >&2
"$VENV/bin/pip" install -q -e workers/python >&2
echo "$stamp" >"$VENV/.stamp"
log "ready ($VENV)"
