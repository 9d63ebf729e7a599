#!/usr/bin/env bash
# The trainer on a GPU machine with nothing to install: the machine's own python3 (torch, transformers,
# peft), no network, this repository's files only. Builds a Qwen3-1.7B-shaped model from a config (random
# weights), runs LoRA and full bf16 steps, and prints one JSON line per check (trainer/gpu_check.py);
# exits non-zero when a check fails. GPU_SMOKE_SMALL=1 runs a tiny config instead (on CPU too);
# GPU_SMOKE_ARGS passes more gpu_check.py options (e.g. "--steps 5"). Under 5 minutes on one H100.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
log="$(mktemp -t hrl-gpu-smoke.XXXXXX.log)"
args=()
[[ "${GPU_SMOKE_SMALL:-0}" == 1 ]] && args+=(--small)
read -r -a extra <<<"${GPU_SMOKE_ARGS:-}"
# The package must import with no more than the GPU machine has (jsonschema is the node protocol's
# only extra dependency and stays out of this path).
"$PY" -c 'import harness_rl_trainer.engine, harness_rl_trainer.loss, harness_rl_trainer.validation' 2>>"$log" || {
  echo '{"check": "import", "ok": false}'
  tail -n 40 "$log" >&2
  exit 1
}
if ! timeout "${GPU_SMOKE_TIMEOUT_S:-600}" "$PY" gpu_check.py "${args[@]}" "${extra[@]}" 2>>"$log"; then
  echo '{"check": "gpu_check", "ok": false, "log": "'"$log"'"}'
  tail -n 40 "$log" >&2
  exit 1
fi
rm -f "$log"
