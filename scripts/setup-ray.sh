#!/usr/bin/env bash
# Ray for the Ray-worker tests and bench: its own venv .cache/ray-venv (Python 3.10+) with the pinned
# ray[default] and this repository's worker package (workers/python) installed in it, with everything they
# install pinned (scripts/pins/ray.txt). Idempotent: a venv that already has both at these pins is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
RAY_VERSION=2.60.0
VENV=.cache/ray-venv
log() { echo "setup-ray: $*" >&2; }
PINS=scripts/pins/ray.txt
stamp="$RAY_VERSION $(cat workers/python/pyproject.toml "$PINS" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$stamp" ]; then
  log "ready ($VENV)"
  exit 0
fi
PY=$(command -v python3.11 || command -v python3)
log "creating $VENV with ray[default]==$RAY_VERSION and harness-rl-worker"
mkdir -p .cache
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
. scripts/pip-wheelhouse.sh
pip_install_pinned "$VENV/bin/python" "$PINS" "ray[default]==$RAY_VERSION" -e workers/python >&2
echo "$stamp" >"$VENV/.stamp"
log "ready ($VENV)"
