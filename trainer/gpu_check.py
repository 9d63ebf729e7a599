"""GPU check (not run in CI): a randomly initialised small transformers model, a few LoRA and full bf16
steps through the trainer, under `torchrun --nproc-per-node 1 trainer/gpu_check.py`; prints JSON lines
with tokens/s, peak memory and MFU. `--small` runs a tiny config (for a CPU smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from harness_rl_trainer.dist import init_distributed, shutdown
from harness_rl_trainer.engine import Trainer, TrainerConfig
from harness_rl_trainer.frames import pack_samples, unpack_samples
from harness_rl_trainer.tiny import build_tiny_qwen3, build_tokenizer

PEAK_BF16_FLOPS = float(os.environ.get("PEAK_FLOPS", 989e12))  # H100/H200 SXM dense bf16


def batch(vocab: int, n: int, length: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        mask = [0] * (length // 4) + [1] * (length - length // 4)
        a = 1.0 if i % 2 else -1.0
        out.append(
            {
                "input_ids": rng.integers(3, vocab, size=length).tolist(),
                "loss_mask": mask,
                "advantages": [a * m for m in mask],
                "old_logprobs": [None] * length,
                "loss_weights": [m / (n * sum(mask)) for m in mask],
            }
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--small", action="store_true")
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    ctx = init_distributed("auto")
    size = (
        dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, intermediate=128)
        if a.small
        else dict(hidden=1024, layers=16, heads=16, kv_heads=8, head_dim=64, intermediate=3072)
    )
    n, length = (4, 64) if a.small else (32, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        if ctx.is_main:
            build_tiny_qwen3(model_dir, tokenizer=build_tokenizer(512), **size)
        ctx.barrier()
        for mode in ("lora", "full"):
            cfg = TrainerConfig(checkpoint_dir=Path(tmp) / "ckpt" / mode, dtype="auto", token_budget=16384)
            t = Trainer(cfg, ctx)
            spec = {
                "name": "check",
                "path": str(model_dir),
                **({"lora": {"rank": 16, "alpha": 32}} if mode == "lora" else {}),
            }
            t.open({"run_id": mode, "model": spec, "seed": 0})
            params = sum(q.numel() for q in t.model.parameters())
            for s in range(a.steps):
                meta, payload = pack_samples(batch(t.vocab, n, length, s))
                h = {
                    "run_id": mode,
                    "key": f"{mode}:{s}",
                    "step": s,
                    "model_version": s,
                    "samples": meta,
                    "loss": {
                        "clip_low": 0.2,
                        "clip_high": 0.28,
                        "tis_cap": 2.0,
                        "kl_coef": 0.0,
                        "learning_rate": 1e-5,
                    },
                }
                if ctx.device.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                r = t.train(h, unpack_samples(meta, payload))
                secs = time.perf_counter() - t0
                tps = n * length / r["seconds"]
                # 6·N·tokens for forward+backward (+ attention ignored); the LoRA step still back-propagates through the base
                mfu = (
                    6 * params * tps / (PEAK_BF16_FLOPS * ctx.world_size)
                    if ctx.device.type == "cuda"
                    else None
                )
                if ctx.is_main:
                    print(
                        json.dumps(
                            {
                                "mode": mode,
                                "step": s,
                                "params": params,
                                "tokens": n * length,
                                "compute_dtype": str(t.compute_dtype),
                                "device": str(ctx.device),
                                "tokens_per_s": round(tps, 1),
                                "step_s_incl_checkpoint": round(secs, 3),
                                "peak_memory_mb": round(r["metrics"]["peak_memory_mb"], 1),
                                "mfu": None if mfu is None else round(mfu, 4),
                                "loss": r["loss"],
                            }
                        ),
                        flush=True,
                    )
            del t
    shutdown()


if __name__ == "__main__":
    main()
