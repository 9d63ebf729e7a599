"""GPU check (CI has no GPU): a randomly initialised Qwen3 through the trainer, LoRA and full bf16 steps.

`python3 trainer/gpu_check.py` (or under `torchrun --nproc-per-node N`), with PYTHONPATH=trainer; run by
trainer/scripts/gpu-smoke.sh. Prints one JSON line per check: the environment, then per step tokens/s
(from the step's own train time, without the checkpoint), MFU, peak memory and the agreement of the
step's logprobs with a no-grad forward of the same weights (the step's StepValidation against rollout
logprobs taken from `Trainer.logprobs`), each with "ok", and a last line; exits 1 when a check fails. `--small` builds a tiny config (a CPU
run of the whole path in seconds); the default is Qwen3-1.7B's shape (28 layers, hidden 2048, 16 heads
of 128, 8 KV heads, MLP 6144, vocabulary 151936, tied embeddings). No network: the model comes from a
config, the tokenizer is trained on this repository's text.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from harness_rl_trainer.dist import DistContext, init_distributed, shutdown
from harness_rl_trainer.engine import Trainer, TrainerConfig
from harness_rl_trainer.frames import pack_samples, unpack_samples
from harness_rl_trainer.tiny import build_tiny_qwen3, build_tokenizer

QWEN3_1_7B = dict(
    hidden=2048,
    layers=28,
    heads=16,
    kv_heads=8,
    head_dim=128,
    intermediate=6144,
    model_vocab=151936,
    tie_embeddings=True,
)
SMALL = dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, intermediate=128)
# Dense bf16 peak of one GPU by name (vendor data sheets, without sparsity); PEAK_FLOPS overrides.
PEAK_BF16 = {
    "H200": 989e12,
    "H100 SXM": 989e12,
    "H100 80GB HBM3": 989e12,
    "H100 PCIe": 756e12,
    "A100": 312e12,
}
LOSS = {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": 2.0, "kl_coef": 0.0, "learning_rate": 1e-5}


def emit(ctx: DistContext, **fields) -> None:
    if ctx.is_main:
        print(json.dumps(fields), flush=True)


def peak_flops(ctx: DistContext) -> float | None:
    if "PEAK_FLOPS" in os.environ:
        return float(os.environ["PEAK_FLOPS"])
    if ctx.device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(ctx.device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def matmul_params(model) -> tuple[int, int]:
    """(frozen, trainable) weights of the linear layers: the ones whose FLOPs scale with N (lm_head
    included, tied or not; embeddings and norms excluded)."""
    frozen = trainable = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            n = m.weight.numel()
            if m.weight.requires_grad:
                trainable += n
            else:
                frozen += n
    return frozen, trainable


def flops_per_token(model, cfg, seq: int) -> float:
    """Model FLOPs of one trained token: 6 per trained weight (forward, input and weight gradients), 4 per
    frozen one (no weight gradient: a LoRA base), and causal attention's 6 · layers · seq · heads · head_dim
    (QKᵀ and AV, forward and backward, half the positions). Recomputation (checkpointing) is not counted."""
    frozen, trainable = matmul_params(model)
    attention = 6 * cfg.num_hidden_layers * seq * cfg.num_attention_heads * cfg.head_dim
    return 4 * frozen + 6 * trainable + attention


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


def with_no_grad_logprobs(t: Trainer, samples: list[dict]) -> list[dict]:
    """A no-grad forward's logprobs as the rollout's: the step's validation compares its own with them."""
    lps = t.logprobs([s["input_ids"] for s in samples])
    for s, lp in zip(samples, lps, strict=True):
        s["old_logprobs"] = [None] + [v if m else None for v, m in zip(lp, s["loss_mask"][1:], strict=True)]
    return samples


def agrees(r: dict, bf16: bool) -> bool:
    """A finite step whose logprobs match the no-grad forward's: 1e-4 nats in fp32; bf16 rounds each
    logit to 8 bits of mantissa and the two forwards batch differently, so 0.02 mean and 0.5 max there."""
    v, m = r["validation"], r["metrics"]
    mean_tol, max_tol = (0.02, 0.5) if bf16 else (1e-4, 1e-3)
    finite = all(x is not None and np.isfinite(x) for x in (r["loss"], m["grad_norm"]))
    return bool(finite and v and v["logprob_diff_mean"] <= mean_tol and v["logprob_diff_max"] <= max_tol)


def run_mode(ctx, a, mode: str, model_dir: Path, work: Path, n: int, length: int) -> bool:
    cfg = TrainerConfig(
        checkpoint_dir=work / "ckpt" / mode,
        dtype=a.dtype,
        token_budget=a.token_budget,
        keep_versions=1,
        save_train_state=mode == "lora",  # a full model's optimiser state is 12 bytes a parameter on disk
    )
    t = Trainer(cfg, ctx)
    lora = {"lora": {"rank": a.lora_rank, "alpha": 2 * a.lora_rank}} if mode == "lora" else {}
    opened = time.perf_counter()
    t.open({"run_id": mode, "model": {"name": "check", "path": str(model_dir), **lora}, "seed": 0})
    model_cfg = t.model.config
    per_token = flops_per_token(t.model, model_cfg, length)
    dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in t.model.parameters()})
    emit(ctx, check=f"{mode}_open", seconds=round(time.perf_counter() - opened, 2), param_dtypes=dtypes)
    peak = peak_flops(ctx)
    ok = True
    for s in range(a.steps):
        samples = with_no_grad_logprobs(t, batch(t.vocab, n, length, s))
        meta, payload = pack_samples(samples)
        h = {
            "run_id": mode,
            "key": f"{mode}:{s}",
            "step": s,
            "model_version": s,
            "samples": meta,
            "loss": LOSS,
        }
        t0 = time.perf_counter()
        r = t.train(h, unpack_samples(meta, payload))
        total = time.perf_counter() - t0
        m, v = r["metrics"], r["validation"] or {}
        tps = m["tokens_per_s"]  # the batch's tokens over the step's train time (checkpoint excluded)
        mfu = per_token * tps / (peak * ctx.world_size) if peak else None
        good = agrees(r, t.compute_dtype == torch.bfloat16)
        ok = ok and good
        emit(
            ctx,
            check=f"{mode}_step",
            ok=good,
            step=s,
            device=str(ctx.device),
            world_size=ctx.world_size,
            compute_dtype=str(t.compute_dtype).removeprefix("torch."),
            tokens=n * length,
            train_s=round(m["train_seconds"], 6),
            step_s_incl_checkpoint=round(total, 6),
            tokens_per_s=round(tps, 1),
            model_flops_per_token=per_token,
            mfu=None if mfu is None else round(mfu, 4),
            peak_memory_mb=round(m["peak_memory_mb"], 1),
            logprob_diff_mean=v.get("logprob_diff_mean"),
            logprob_diff_max=v.get("logprob_diff_max"),
            prob_correlation=v.get("prob_correlation"),
            loss=r["loss"],
            grad_norm=m["grad_norm"],
        )
    del t
    if ctx.device.type == "cuda":
        torch.cuda.empty_cache()
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="a tiny config (CPU smoke run)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--modes", default="lora,full")
    p.add_argument("--seqs", type=int, default=None, help="sequences per batch (default 16, small 4)")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default 1024, small 64)")
    p.add_argument("--token-budget", type=int, default=4096, help="padded tokens per micro-batch")
    p.add_argument("--lora-rank", type=int, default=32)
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    a = p.parse_args()
    started = time.perf_counter()
    ctx = init_distributed("auto")
    import peft
    import transformers

    emit(
        ctx,
        check="env",
        python=platform.python_version(),
        torch=torch.__version__,
        transformers=transformers.__version__,
        peft=peft.__version__,
        cuda=torch.version.cuda,
        gpu=torch.cuda.get_device_name(ctx.device) if ctx.device.type == "cuda" else None,
        world_size=ctx.world_size,
        peak_flops=peak_flops(ctx),
    )
    n = a.seqs or (4 if a.small else 16)
    length = a.seq_len or (64 if a.small else 1024)
    # one folder for every rank: rank 0 makes it and the model in it, the others are told its path
    work = Path(ctx.broadcast(tempfile.mkdtemp(prefix="hrl-gpu-check-") if ctx.is_main else None))
    try:
        model_dir = work / "model"
        if ctx.is_main:
            built = time.perf_counter()
            shape = SMALL if a.small else QWEN3_1_7B
            dev = str(ctx.device) if ctx.device.type == "cuda" else "cpu"
            dtype = "float32" if a.small else "bfloat16"
            build_tiny_qwen3(model_dir, tokenizer=build_tokenizer(512), dtype=dtype, device=dev, **shape)
            size = sum(f.stat().st_size for f in model_dir.iterdir())
            emit(ctx, check="model", seconds=round(time.perf_counter() - built, 2), bytes=size, **shape)
        ctx.barrier()
        ok = all([run_mode(ctx, a, mode, model_dir, work, n, length) for mode in a.modes.split(",")])
        ctx.barrier()
    finally:
        if ctx.is_main:
            shutil.rmtree(work, ignore_errors=True)
    emit(ctx, check="done", ok=ok, seconds=round(time.perf_counter() - started, 1))
    shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
