"""Shared test helpers: batches, a stdio client for the trainer process."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness_rl_trainer.frames import decode_frame, encode_frame, pack_samples, read_stdio_frame

TRAINER_DIR = Path(__file__).resolve().parents[1]
REPO = TRAINER_DIR.parent
LOSS = {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": 2.0, "kl_coef": 0.0, "learning_rate": 1e-2}


def with_mu(samples: list[dict], seed: int = 0) -> list[dict]:
    """Made-up rollout logprobs on the response tokens (every 7th unknown, every 11th at vLLM's floor)."""
    rng = np.random.default_rng(seed)
    for s in samples:
        mu = [None if not m else float(-rng.uniform(0.5, 8.0)) for m in s["loss_mask"]]
        s["old_logprobs"] = [
            None if v is None or i % 7 == 0 else (-9999.0 if i % 11 == 0 else v) for i, v in enumerate(mu)
        ]
    return samples


def make_samples(vocab: int, n: int = 4, seed: int = 0, prompt: int = 6, response: int = 10) -> list[dict]:
    """Deterministic samples: a prompt (mask 0) then a response (mask 1), GRPO-like advantages, token-mean weights."""
    rng = np.random.default_rng(seed)
    out = []
    T = n * response
    for i in range(n):
        L = prompt + response + i  # unequal lengths
        ids = rng.integers(3, vocab, size=L).tolist()
        mask = [0] * prompt + [1] * (L - prompt)
        a = 1.0 if i % 2 == 0 else -1.0
        out.append(
            {
                "rollout_id": f"r{i}",
                "group_id": "g0",
                "index": 0,
                "input_ids": ids,
                "loss_mask": mask,
                "advantages": [a * m for m in mask],
                "old_logprobs": [None] * L,
                "loss_weights": [m / T for m in mask],
            }
        )
    return out


def train_header(
    run_id: str, step: int, samples: list[dict], loss: dict | None = None, key: str | None = None
):
    meta, payload = pack_samples(samples)
    h = {
        "t": "train",
        "id": f"train-{step}",
        "key": key or f"{run_id}:{step}",
        "run_id": run_id,
        "step": step,
        "model_version": step,
        "loss": loss or LOSS,
        "samples": meta,
    }
    return h, payload


class StdioTrainer:
    """The trainer process (optionally under torchrun), spoken to over stdio as a node agent would."""

    def __init__(
        self, checkpoint_dir: Path, nproc: int = 0, extra: list[str] | None = None, env: dict | None = None
    ):
        if nproc:
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                str(nproc),
                "--master-port",
                str(29500 + os.getpid() % 1000),
                "-m",
                "harness_rl_trainer",
            ]
        else:
            cmd = [sys.executable, "-m", "harness_rl_trainer"]
        cmd += ["--checkpoint-dir", str(checkpoint_dir), "--no-grad-ckpt", *(extra or [])]
        env = {
            **os.environ,
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            **(env or {}),
        }
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def send_raw(self, frame: bytes) -> None:
        self.proc.stdin.write(struct.pack("<I", len(frame)) + frame)
        self.proc.stdin.flush()

    def send(self, header: dict, payload: bytes = b"") -> None:
        self.send_raw(encode_frame(header, payload))

    def recv(self) -> tuple[dict, bytes]:
        data = read_stdio_frame(self.proc.stdout)
        assert data is not None, f"trainer exited (rc {self.proc.poll()})"
        h, p = decode_frame(data)
        return h, bytes(p)

    def call(self, header: dict, payload: bytes = b"") -> dict:
        self.send(header, payload)
        return self.recv()[0]

    def close(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(timeout=120)
