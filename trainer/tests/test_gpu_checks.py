"""Start-up checks for a GPU machine (issue 39): a hub id as model.path (offline mode respected), torch that
cannot use the GPUs nvidia-smi sees (a CUDA 13 wheel on an older driver trains on the CPU otherwise), and a
card without room for the model. nvidia-smi is a stand-in script on PATH: no GPU exists here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from harness_rl_trainer.gpu import cuda_problem, gpu_processes, room_needed, room_problem
from harness_rl_trainer.model import TrainerError, resolve_model_path

FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, 550.54.15" ;;
  *--query-compute-apps=*) echo "4242, /opt/vllm-venv/bin/python3, 71234" ;;
esac
"""


@pytest.fixture
def fake_smi(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    return str(bin_dir)


def trainer(tmp_path, path_dir: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{path_dir}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "harness_rl_trainer", "--checkpoint-dir", str(tmp_path / "c"), *args],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
    )


def test_gpus_torch_cannot_use_stop_the_trainer_naming_driver_torch_and_its_cuda(tmp_path, fake_smi):
    import torch

    r = trainer(tmp_path, fake_smi)
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert "nvidia-smi sees 1 GPU(s) (NVIDIA H100 80GB HBM3, driver 550.54.15)" in err
    assert f"torch {torch.__version__}" in err and "would train on the CPU" in err
    if torch.version.cuda and torch.version.cuda.startswith("13"):
        assert f"built for CUDA {torch.version.cuda}, which needs an NVIDIA driver R580 or newer" in err


def test_device_cpu_is_not_checked(tmp_path, fake_smi):
    assert trainer(tmp_path, fake_smi, "--device", "cpu").returncode == 0


def test_the_messages_for_a_cpu_wheel_and_for_a_new_enough_driver():
    gpus = [{"index": "0", "name": "NVIDIA L4", "driver": "580.65.06"}]
    assert "CPU-only build" in cuda_problem("auto", gpus, "2.15.0+cpu", None, False)
    assert "check CUDA_VISIBLE_DEVICES" in cuda_problem("cuda", gpus, "2.15.0+cu132", "13.2", False)
    assert cuda_problem("auto", gpus, "2.15.0+cu132", "13.2", True) is None
    assert cuda_problem("auto", [], "2.15.0+cu132", "13.2", False) is None


def test_a_card_without_room_names_the_process_that_holds_it(tmp_path, fake_smi, monkeypatch, tiny_model):
    monkeypatch.setenv("PATH", f"{fake_smi}:{os.environ['PATH']}")
    held = gpu_processes()
    assert held == [{"pid": "4242", "name": "/opt/vllm-venv/bin/python3", "used_mib": "71234"}]
    gib = 2**30
    msg = room_problem(0, 3 * gib, 80 * gib, 4 * gib, held)
    assert msg.startswith("GPU 0 has 3.0 GiB free of 80.0 GiB; the model needs at least 4.0 GiB")
    assert "pid 4242 (/opt/vllm-venv/bin/python3, 71234 MiB)" in msg
    assert room_problem(0, 5 * gib, 80 * gib, 4 * gib, held) is None
    size = sum(f.stat().st_size for f in tiny_model.glob("*.safetensors"))
    assert room_needed(str(tiny_model), True, 1) == size
    assert room_needed(str(tiny_model), False, 2) == 4 * size


def hub_snapshot(cache, repo_id: str, model_dir) -> str:
    """A hub cache entry as huggingface_hub lays it out (refs/main names the snapshot)."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / ("0" * 40)
    shutil.copytree(model_dir, snap)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    return str(snap)


def test_a_hub_id_as_model_path_resolves_to_its_cached_snapshot_offline(tmp_path, monkeypatch, tiny_model):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snap = hub_snapshot(tmp_path / "hub", "Qwen/Qwen3-1.7B", tiny_model)
    assert resolve_model_path({"name": "policy", "path": "Qwen/Qwen3-1.7B"}) == snap


def test_a_hub_id_not_in_the_cache_offline_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    with pytest.raises(TrainerError, match=r"model Qwen/Qwen3-1\.7B is not in the hub cache .* offline") as e:
        resolve_model_path({"name": "policy", "path": "Qwen/Qwen3-1.7B"})
    assert e.value.field == "run.model.path"
    with pytest.raises(TrainerError, match="does not exist or is not a folder"):
        resolve_model_path({"name": "policy", "path": str(tmp_path / "nowhere")})
