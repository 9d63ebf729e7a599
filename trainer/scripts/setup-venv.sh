#!/usr/bin/env bash
# Creates trainer/.venv and installs the trainer with its pinned dependencies (constraints.txt).
# Idempotent: a stamp holding the hash of pyproject.toml + constraints.txt skips the install when
# nothing changed. The pinned wheels come from the wheelhouse of scripts/pip-wheelhouse.sh (kept between
# checkouts: torch's CUDA build is ~3 GB).
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

# shellcheck source=../../scripts/pip-wheelhouse.sh
. "$TRAINER_DIR/../scripts/pip-wheelhouse.sh"
start=$(date +%s)
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade "pip>=24"
pip_install_pinned "$VENV/bin/python" constraints.txt -e ".[dev]"
stamp_value > "$VENV/.harness-rl-stamp"
echo "trainer venv installed in $(( $(date +%s) - start ))s: $VENV" >&2
