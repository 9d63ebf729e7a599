"""trainer/scripts/gpu-smoke.sh end to end in its tiny mode (CPU), and gpu_check's FLOPs count."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .helpers import TRAINER_DIR
from .test_trainer import open_trainer

sys.path.insert(0, str(TRAINER_DIR))
import gpu_check  # noqa: E402


def test_model_flops_are_4n_for_a_frozen_base_6n_for_trained_weights_plus_attention(tmp_path, tiny_model):
    lora = open_trainer(tmp_path / "lora", tiny_model, {"rank": 8, "alpha": 16}).model
    full = open_trainer(tmp_path / "full", tiny_model).model
    cfg = full.config
    frozen, trained = gpu_check.matmul_params(lora)
    assert gpu_check.matmul_params(full) == (0, frozen)  # the LoRA base is the full model's weights
    attention = 6 * cfg.num_hidden_layers * 100 * cfg.num_attention_heads * cfg.head_dim
    assert gpu_check.flops_per_token(full, cfg, 100) == 6 * frozen + attention
    assert gpu_check.flops_per_token(lora, cfg, 100) == 4 * frozen + 6 * trained + attention


def test_the_gpu_smoke_script_runs_end_to_end_in_its_tiny_mode():
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "2",
        "GPU_SMOKE_SMALL": "1",
        "GPU_SMOKE_ARGS": "--steps 1 --dtype bfloat16",
        "PYTHON": sys.executable,
    }
    out = subprocess.run(
        [str(TRAINER_DIR / "scripts" / "gpu-smoke.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    checks = {line["check"]: line for line in lines}
    assert list(checks) == ["env", "model", "lora_open", "lora_step", "full_open", "full_step", "done"]
    assert checks["done"]["ok"] is True
    # the LoRA base in bf16, its adapter in fp32; full training keeps fp32 master weights
    assert checks["lora_open"]["param_dtypes"] == ["bfloat16", "float32"]
    assert checks["full_open"]["param_dtypes"] == ["float32"]
    for mode in ("lora", "full"):
        step = checks[f"{mode}_step"]
        assert step["ok"] and step["compute_dtype"] == "bfloat16"
        assert step["tokens_per_s"] == pytest.approx(step["tokens"] / step["train_s"], rel=0.01)
        assert step["train_s"] <= step["step_s_incl_checkpoint"]
        assert step["logprob_diff_max"] is not None and step["peak_memory_mb"] > 0
