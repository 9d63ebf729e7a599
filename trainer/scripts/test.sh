#!/usr/bin/env bash
# The trainer's tests: set up the venv (idempotent), then ruff and pytest on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh
export CUDA_VISIBLE_DEVICES="" OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q "$@"
