#!/usr/bin/env bash
# Creates trainer/.venv and installs the trainer with its pinned dependencies (constraints.txt).
# Idempotent: a stamp holding the hash of pyproject.toml + constraints.txt skips the install when
# nothing changed. Every pinned wheel is kept in a wheelhouse (HARNESS_RL_WHEELS, default
# ~/.cache/harness-rl/wheels) and installed from there: PyPI answers without cache headers, so pip's own
# cache keeps none of torch's ~3 GB, and a fresh checkout would download them all again.
set -euo pipefail
cd "$(dirname "$0")/.."
TRAINER_DIR=$(pwd)
VENV="$TRAINER_DIR/.venv"
PY=${PYTHON:-python3}

stamp_value() { cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1; }

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.harness-rl-stamp" ] && [ "$(cat "$VENV/.harness-rl-stamp")" = "$(stamp_value)" ]; then
  echo "trainer venv up to date: $VENV" >&2
  exit 0
fi

if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
  echo "setup-venv: need Python >= 3.10 as '$PY' (set PYTHON=...)" >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 ships venv/ensurepip separately.
    rm -rf "$VENV"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    ver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    $SUDO apt-get install -y -qq "python${ver}-venv" >/dev/null || $SUDO apt-get install -y -qq python3-venv >/dev/null
    "$PY" -m venv "$VENV"
  fi
fi

WHEELS=${HARNESS_RL_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-rl/wheels}
mkdir -p "$WHEELS"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }

start=$(date +%s)
pip install --upgrade "pip>=24"
# A download cut off mid-file (PyPI's CDN does that to the large CUDA wheels) fails pip after its own
# resumes; running it again keeps the wheels already whole, so each try only fetches what is missing.
for try in 1 2 3 4; do
  if pip download --no-deps -d "$WHEELS" -r constraints.txt; then break; fi
  [ "$try" = 4 ] && { echo "setup-venv: could not download the pinned wheels into $WHEELS" >&2; exit 1; }
  echo "setup-venv: download try $try cut off, trying again" >&2
  sleep $((try * 15))
done
pip install --no-index --find-links "$WHEELS" -c constraints.txt -e ".[dev]"
stamp_value > "$VENV/.harness-rl-stamp"
echo "trainer venv installed in $(( $(date +%s) - start ))s: $VENV" >&2
