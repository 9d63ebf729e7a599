"""Start-up checks on a GPU machine: torch can use the GPUs nvidia-smi sees, and a card has room for the model.

Both fail loudly instead of training on the CPU, or running out of memory mid-step because vLLM (or anything
else) already holds the card; each message names what to change.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .model import TrainerError

GIB = 2**30


def _smi(*query: str) -> list[list[str]]:
    """Rows of ``nvidia-smi --query-… --format=csv,noheader,nounits`` ([] without nvidia-smi or GPUs)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", *query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]


def smi_gpus() -> list[dict]:
    """The GPUs the driver sees: index, name, driver version."""
    rows = _smi("--query-gpu=index,name,driver_version")
    return [{"index": r[0], "name": r[1], "driver": r[2]} for r in rows if len(r) >= 3]


def gpu_processes() -> list[dict]:
    """The processes holding GPU memory (pid, name, MiB), as nvidia-smi lists them."""
    rows = _smi("--query-compute-apps=pid,process_name,used_memory")
    return [{"pid": r[0], "name": r[1], "used_mib": r[2]} for r in rows if len(r) >= 3]


def cuda_problem(device: str, gpus: list[dict], torch_version: str, torch_cuda: str | None, available: bool):
    """The message when the driver sees GPUs and torch cannot use them (None when all is well)."""
    if not (device == "auto" or device.startswith("cuda")) or not gpus or available:
        return None
    driver = gpus[0]["driver"]
    seen = f"nvidia-smi sees {len(gpus)} GPU(s) ({gpus[0]['name']}, driver {driver})"
    base = torch_version.split("+")[0]
    if torch_cuda is None:
        fix = (
            f"torch {torch_version} is a CPU-only build: install the CUDA build in the trainer's venv "
            "(trainer/scripts/setup-venv.sh installs the pinned one)"
        )
    else:
        major = driver.split(".")[0]
        old = major.isdigit() and torch_cuda.split(".")[0] == "13" and int(major) < 580
        fix = (
            f"torch {torch_version} is built for CUDA {torch_cuda}, which needs an NVIDIA driver R580 or newer "
            f"(this one is {driver}): update the driver, or install torch=={base} built for CUDA 12 "
            f"(pip install torch=={base} --index-url https://download.pytorch.org/whl/cu128) in the trainer's venv"
            if old
            else f"torch {torch_version} (CUDA {torch_cuda}) sees no GPU with driver {driver}: check "
            "CUDA_VISIBLE_DEVICES and that the driver's CUDA version (nvidia-smi) is at least torch's"
        )
    return f"{seen}, but torch cannot use them, so --device {device} would train on the CPU. {fix}."


def check_cuda(device: str) -> None:
    """Refuses to start (SystemExit with the message) when nvidia-smi sees GPUs and torch does not."""
    import torch

    problem = cuda_problem(
        device, smi_gpus(), torch.__version__, torch.version.cuda, torch.cuda.is_available()
    )
    if problem:
        raise SystemExit(f"harness_rl_trainer: {problem}")


def weights_bytes(model_dir: str) -> int:
    """The size of the model's weight files (safetensors, else .bin)."""
    files = list(Path(model_dir).glob("*.safetensors")) or list(Path(model_dir).glob("*.bin"))
    return sum(f.stat().st_size for f in files)


def room_needed(model_dir: str, lora: bool, world_size: int) -> int:
    """A lower bound of the GPU memory a rank needs: the weights as stored (LoRA: the frozen base), or for
    full training the fp32 master weights, their gradients and AdamW's two moments (16 bytes a parameter,
    8x a bf16 checkpoint), sharded over the ranks."""
    size = weights_bytes(model_dir)
    return size if lora else 8 * size // max(1, world_size)


def room_problem(index: int, free: int, total: int, need: int, processes: list[dict]) -> str | None:
    if free >= need:
        return None
    held = (
        ", ".join(f"pid {p['pid']} ({p['name']}, {p['used_mib']} MiB)" for p in processes) or "nothing listed"
    )
    return (
        f"GPU {index} has {free / GIB:.1f} GiB free of {total / GIB:.1f} GiB; the model needs at least "
        f"{need / GIB:.1f} GiB. Held by: {held}. Give the trainer another GPU (--gpus on the node agents) or "
        "lower vLLM's share of this one (--gpu-memory-utilization)"
    )


def check_gpu_room(model_dir: str, lora: bool, device, world_size: int = 1) -> None:
    """Refuses (TrainerError on run.model.path) a model the card's free memory cannot hold; memory this
    process holds already (a previous run's model, freed when the next is built) counts as free."""
    import torch

    if getattr(device, "type", None) != "cuda":
        return
    free, total = torch.cuda.mem_get_info(device)
    free += torch.cuda.memory_reserved(device)
    problem = room_problem(
        device.index or 0, free, total, room_needed(model_dir, lora, world_size), gpu_processes()
    )
    if problem:
        raise TrainerError(problem, field="run.model.path")
