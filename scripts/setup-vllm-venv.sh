#!/usr/bin/env bash
# vLLM's own virtual environment on a GPU machine, the one `harness-rl node --model …` starts vLLM from.
# vLLM and the trainer cannot share a venv: vLLM 0.34.0 pins torch==2.14.0 and transformers<5.23
# (its METADATA), the trainer torch 2.15 and transformers 5.24 (trainer/constraints.txt).
#
#   scripts/setup-vllm-venv.sh [--dry-run] [VENV]
#
# VENV: default $HARNESS_RL_VLLM_VENV, else ~/.harness-rl-node/vllm-venv (where the node agent looks).
# PYTHON: the interpreter to build it with (default python3; vLLM 0.34 takes Python 3.11 to 3.14).
# Idempotent: a stamp holding the pinned version skips the install when it is already there.
# --dry-run prints what it would do and changes nothing.
set -euo pipefail

VLLM_VERSION=0.34.0
DRY=0
if [ "${1:-}" = "--dry-run" ]; then
  DRY=1
  shift
fi
VENV=${1:-${HARNESS_RL_VLLM_VENV:-$HOME/.harness-rl-node/vllm-venv}}
PY=${PYTHON:-python3}
STAMP="$VENV/.harness-rl-vllm"

run() {
  if [ "$DRY" = 1 ]; then
    echo "would run: $*"
  else
    "$@"
  fi
}

if [ -x "$VENV/bin/vllm" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "vllm==$VLLM_VERSION" ]; then
  echo "vLLM $VLLM_VERSION is installed in $VENV" >&2
  exit 0
fi

if ! ver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")' 2>/dev/null); then
  echo "setup-vllm-venv: no Python as '$PY' (set PYTHON=...)" >&2
  exit 1
fi
case "$ver" in
  3.11 | 3.12 | 3.13 | 3.14) ;;
  *)
    echo "setup-vllm-venv: vLLM $VLLM_VERSION needs Python 3.11 to 3.14; '$PY' is $ver (set PYTHON=...)" >&2
    exit 1
    ;;
esac

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "setup-vllm-venv: warning: no nvidia-smi here; vLLM's CUDA build needs an NVIDIA GPU and driver to run" >&2
fi

if [ ! -x "$VENV/bin/python" ]; then
  run mkdir -p "$(dirname "$VENV")"
  run "$PY" -m venv "$VENV"
fi
run "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade "pip>=24"
# vLLM's own pins choose torch, transformers and the CUDA wheels; nothing of the trainer's goes in here.
run "$VENV/bin/python" -m pip install --disable-pip-version-check "vllm==$VLLM_VERSION"
if [ "$DRY" = 1 ]; then
  echo "would write: vllm==$VLLM_VERSION > $STAMP"
else
  echo "vllm==$VLLM_VERSION" >"$STAMP"
  "$VENV/bin/vllm" --version >&2 || true
fi
echo "vLLM $VLLM_VERSION in $VENV: \`harness-rl node --role inference --model MODEL …\` starts $VENV/bin/vllm" >&2
