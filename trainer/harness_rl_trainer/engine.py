"""The trainer: one run's model and optimiser, a train step that reads top to bottom, checkpoints.

Layout of a run's folder (``<checkpoint_dir>/<run_id>/``):
  state.json          version, last applied step {key, result}, the model spec, the weights of the version
  weights/v<N>/       the weights of version N (LoRA adapter or full safetensors folder), the newest few kept
  train-v<N>/         model + optimiser state (torch.distributed.checkpoint) of version N, the newest only
state.json is replaced atomically after the folders it names are complete, so a crash at any point
resumes from the last complete version.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .dist import DistContext, shard
from .frames import Samples
from .loss import policy_loss
from .model import (
    TrainerError,
    check_lora,
    checkpoint_dtype,
    decoder_layers,
    file_entries,
    load_model,
    token_logprobs,
    write_weights,
)
from .validation import Validation, token_numbers


@dataclass
class TrainerConfig:
    checkpoint_dir: Path
    dtype: str = "auto"  # auto: bf16 on a GPU that has it, else fp32
    token_budget: int = 8192  # padded tokens per micro-batch
    grad_ckpt: bool = True
    keep_versions: int = 3
    save_train_state: bool = True  # False: weights only, no optimiser state to resume from (gpu_check)
    max_grad_norm: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0


def micro_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Sample indices packed into micro-batches of at most ``budget`` padded tokens (longest first)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = max([lengths[j] for j in cur] + [lengths[i]])
        if cur and width * (len(cur) + 1) > budget:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def _safe_name(run_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", run_id)[:120]


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class Trainer:
    def __init__(self, config: TrainerConfig, ctx: DistContext | None = None):
        self.cfg = config
        self.ctx = ctx or DistContext()
        self.run: dict | None = None
        self.model = None
        self.optim: torch.optim.Optimizer | None = None
        self.ref_model = None
        self.version = 0
        self.last: dict | None = None
        self.weights: dict | None = None
        self.base_path = ""
        self.save_dtype = torch.float32
        dev = self.ctx.device
        want_bf16 = config.dtype == "bfloat16" or (
            config.dtype == "auto" and dev.type == "cuda" and torch.cuda.is_bf16_supported()
        )
        self.compute_dtype = torch.bfloat16 if want_bf16 else torch.float32

    # ---- runs -----------------------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.cfg.checkpoint_dir / _safe_name(run_id)

    def open(self, run: dict) -> dict:
        """Loads the run's model (resuming from its checkpoint folder); returns the ``opened`` fields."""
        check_lora(run["model"].get("lora"))
        state_file = self.run_dir(run["run_id"]) / "state.json"
        state = json.loads(state_file.read_text()) if state_file.is_file() else None
        if state is not None and state["model"] != run["model"]:
            raise TrainerError(
                f"run {run['run_id']}: its checkpoint ({state_file}) was trained from model {state['model']}, not {run['model']}",
                field="run.model",
            )
        self._build(run)
        self.run = run
        self.version, self.last, self.weights = 0, None, None
        if state is not None:
            self._load_train_state(self.run_dir(run["run_id"]) / state["train_state"])
            self.version, self.last, self.weights = state["version"], state["last"], state["weights"]
        return {"version": self.version, "last": self.last, "weights": self.weights}

    def _build(self, run: dict) -> None:
        self.model = self.optim = self.ref_model = None
        model, path = load_model(
            run["model"], grad_ckpt=self.cfg.grad_ckpt, seed=run["seed"], base_dtype=self.compute_dtype
        )
        self.base_path = path
        self.save_dtype = checkpoint_dtype(path)
        model.to(self.ctx.device)
        if self.ctx.enabled:
            shard(model, self.ctx, decoder_layers(model), self.compute_dtype)
        self.model = model
        params = [p for p in model.parameters() if p.requires_grad]
        self.optim = torch.optim.AdamW(
            params, lr=1e-6, betas=self.cfg.betas, eps=self.cfg.eps, weight_decay=self.cfg.weight_decay
        )
        self.vocab = model.get_input_embeddings().num_embeddings

    def _reference_logprobs(self, ids, attn, temperature=None):
        """Logprobs under the reference policy: the base without the adapter (LoRA) or a frozen copy (full)."""
        with torch.no_grad(), self._autocast():
            if hasattr(self.model, "disable_adapter"):
                with self.model.disable_adapter():
                    return token_logprobs(self.model, ids, attn, temperature=temperature)[0]
            if self.ref_model is None:
                ref, _ = load_model(
                    self.run["model"], grad_ckpt=False, seed=self.run["seed"], base_dtype=self.compute_dtype
                )
                ref.requires_grad_(False)
                ref.to(self.ctx.device)
                if self.ctx.enabled:
                    shard(ref, self.ctx, decoder_layers(ref), self.compute_dtype)
                self.ref_model = ref
            return token_logprobs(self.ref_model, ids, attn, temperature=temperature)[0]

    def _autocast(self):
        if self.compute_dtype == torch.bfloat16 and not self.ctx.enabled:
            return torch.autocast(self.ctx.device.type, dtype=torch.bfloat16)
        return torch.autocast(self.ctx.device.type, enabled=False)

    def logprobs(
        self, input_ids: list[list[int]], temperatures: list[float] | None = None
    ) -> list[list[float]]:
        """log p(token t | tokens < t) for t ≥ 1 of each sequence at its temperature (default 1), under the
        current weights (no update)."""
        self.model.eval()
        out = []
        with torch.no_grad(), self._autocast():
            for i, ids in enumerate(input_ids):
                x = torch.tensor([ids], dtype=torch.long, device=self.ctx.device)
                temp = torch.tensor(
                    [1.0 if temperatures is None else temperatures[i]], device=self.ctx.device
                )
                lp, _ = token_logprobs(self.model, x, torch.ones_like(x), temperature=temp)
                out.append(lp[0].double().cpu().tolist())
        return out

    # ---- a step ---------------------------------------------------------------------------------

    def validate(self, header: dict, samples: Samples) -> None:
        """Everything checked before the weights are touched: a bad batch changes nothing."""
        if self.run is None or header["run_id"] != self.run["run_id"]:
            raise TrainerError(
                f"run {header['run_id']} is not open on this trainer (send open first)", field="run_id"
            )
        if len(samples) == 0:
            raise TrainerError("the batch has no samples", field="samples.lengths")
        ids = samples.input_ids
        bad = np.flatnonzero((ids < 0) | (ids >= self.vocab))
        if bad.size:
            raise TrainerError(
                f"token id {int(ids[bad[0]])} at token {int(bad[0])} is outside the vocabulary (0..{self.vocab - 1})",
                field="samples",
            )
        sel = (samples.loss_mask != 0) & (samples.loss_weights != 0)
        if not (np.isfinite(samples.loss_weights).all() and np.isfinite(samples.advantages[sel]).all()):
            raise TrainerError("non-finite loss weight or advantage on a trained token", field="samples")
        if not np.isin(samples.loss_mask, (0, 1)).all():
            raise TrainerError("loss_mask holds values other than 0 and 1", field="samples")
        temps = samples.temperatures
        if temps is not None and not all(math.isfinite(t) and t > 0 for t in temps):
            raise TrainerError("a sample temperature is not a positive number", field="samples.temperatures")
        loss = header["loss"]
        if loss["kl_coef"] > 0 and loss.get("tis_cap") is not None and loss["tis_cap"] <= 0:
            raise TrainerError("tis_cap must be positive", field="loss.tis_cap")

    def train(self, header: dict, samples: Samples) -> dict:
        """One optimiser step on the batch; returns TrainerStepResult. A repeated key returns the stored result."""
        if self.last is not None and header["key"] == self.last["key"]:
            return self.last["result"]
        self.validate(header, samples)
        try:
            result = self._step(header, samples)
        except Exception:
            self._restore()
            raise
        return result

    def _restore(self) -> None:
        """Back to the last good checkpoint (the in-memory weights may be half updated)."""
        if self.optim is not None:
            self.optim.zero_grad(set_to_none=True)
        run = self.run
        if run is not None:
            self.open(run)

    def _micro_batch(self, samples: Samples, offs: list[int], idx: list[int], numbers: np.ndarray):
        """The padded tensors of one micro-batch (on the CPU); ``numbers`` as validation.token_numbers."""
        width = max(samples.lengths[i] for i in idx)
        b = len(idx)
        t = {
            "ids": torch.zeros((b, width), dtype=torch.long),
            "attn": torch.zeros((b, width), dtype=torch.long),
            "mask": torch.zeros((b, width), dtype=torch.bool),
            "mu": torch.full((b, width), float("nan"), dtype=torch.float64),
            "adv": torch.zeros((b, width), dtype=torch.float32),
            "w": torch.zeros((b, width), dtype=torch.float64),
            "num": torch.full((b, width), -1, dtype=torch.long),
            "temp": torch.tensor([samples.temperature(i) for i in idx], dtype=torch.float32),
        }
        for row, i in enumerate(idx):
            s, e = offs[i], offs[i + 1]
            n = e - s
            t["ids"][row, :n] = torch.from_numpy(samples.input_ids[s:e].astype(np.int64))
            t["attn"][row, :n] = 1
            t["mask"][row, :n] = torch.from_numpy(samples.loss_mask[s:e] != 0)
            t["mu"][row, :n] = torch.from_numpy(samples.old_logprobs[s:e])
            t["adv"][row, :n] = torch.from_numpy(samples.advantages[s:e])
            t["w"][row, :n] = torch.from_numpy(samples.loss_weights[s:e])
            t["num"][row, :n] = torch.from_numpy(numbers[s:e])
        return t, b * width

    def _optimizer_step(self, lr: float | None) -> float:
        """Clips the accumulated gradients, steps (unless ``lr`` is None: nothing was trained), returns the norm."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        grad_norm = torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm)
        if hasattr(grad_norm, "full_tensor"):
            grad_norm = grad_norm.full_tensor()
        if lr is not None:
            for g in self.optim.param_groups:
                g["lr"] = lr
            self.optim.step()
        self.optim.zero_grad(set_to_none=True)
        return float(grad_norm)

    def _step(self, header: dict, samples: Samples) -> dict:
        started = time.perf_counter()
        ctx, loss_cfg = self.ctx, header["loss"]
        dev = ctx.device
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        self.model.train()
        offs = samples.offsets()
        groups = micro_batches(samples.lengths, self.cfg.token_budget)
        mine = groups[ctx.rank :: ctx.world_size]
        rounds = -(-len(groups) // ctx.world_size)
        numbers = token_numbers(samples)
        check = Validation(numbers, loss_cfg.get("tis_cap"))
        sums = {"loss": 0.0, "tokens": 0.0, "clipped": 0.0, "kl": 0.0, "entropy": 0.0, "padded": 0.0}
        for r in range(rounds):
            # every rank runs the same number of forward/backward passes; a rank short of micro-batches
            # (fewer groups than ranks, or an uneven split) repeats one with a zero loss scale
            dummy = r >= len(mine)
            idx = (mine[0] if mine else groups[0]) if dummy else mine[r]
            self._train_micro_batch(samples, offs, idx, numbers, loss_cfg, dummy, sums, check)
        keys = list(sums)
        sums = dict(zip(keys, ctx.all_sum([sums[k] for k in keys]), strict=True))
        validation = check.result(ctx)
        tokens = int(sums["tokens"])
        grad_norm = self._optimizer_step(loss_cfg["learning_rate"] if tokens > 0 else None)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        train_seconds = time.perf_counter() - started
        metrics = {
            "grad_norm": grad_norm if math.isfinite(grad_norm) else None,
            "train_seconds": train_seconds,
            "tokens_per_s": float(sum(samples.lengths)) / max(train_seconds, 1e-9),
            "trained_tokens_per_s": tokens / max(train_seconds, 1e-9),
            "peak_memory_mb": _peak_memory_mb(dev),
            "micro_batches": float(len(groups)),
            "padding_fraction": 1.0 - sum(samples.lengths) / max(sums["padded"], 1.0),
            "world_size": float(ctx.world_size),
            **legacy_agreement(validation),
        }
        n = max(tokens, 1)
        result = {
            "model_version": self.version + 1,
            "loss": sums["loss"],
            "clip_fraction": sums["clipped"] / n,
            "kl": sums["kl"] / n,
            "entropy": sums["entropy"] / n,
            "tokens": tokens,
            "seconds": 0.0,
            "checkpoint": None,
            "validation": validation,
            "weights": None,
            "metrics": metrics,
        }
        return self._checkpoint(self.version + 1, header["key"], result, started)

    def _train_micro_batch(
        self,
        samples: Samples,
        offs: list[int],
        idx: list[int],
        numbers: np.ndarray,
        loss_cfg: dict,
        dummy: bool,
        sums: dict,
        check: Validation,
    ) -> None:
        """One forward and backward pass over the samples ``idx``; its figures go to ``sums`` and
        ``check``. A ``dummy`` pass (a rank short of micro-batches) has a zero loss scale and adds none."""
        ctx, dev = self.ctx, self.ctx.device
        t, padded = self._micro_batch(samples, offs, idx, numbers)
        ids, attn, temp = t["ids"].to(dev), t["attn"].to(dev), t["temp"].to(dev)
        # token t is predicted at position t−1: targets are t ≥ 1 with mask 1 and a non-zero weight
        sel = (t["mask"][:, 1:] & (t["w"][:, 1:] != 0)).to(dev)
        with self._autocast():
            logp_all, ent_all = token_logprobs(self.model, ids, attn, with_entropy=True, temperature=temp)
        ref = None
        if loss_cfg["kl_coef"] > 0:
            ref = self._reference_logprobs(ids, attn, temp)[sel]
        lp = logp_all[sel]
        mu = t["mu"][:, 1:].to(dev)[sel]
        # GSPO (loss.policy_ratio "sequence"): a sequence is one sample, i.e. one row of the micro-batch
        rows = None
        if loss_cfg.get("policy_ratio", "token") == "sequence":
            rows = torch.arange(sel.shape[0], device=dev)[:, None].expand_as(sel)[sel]
        parts = policy_loss(
            lp,
            mu,
            t["adv"][:, 1:].to(dev)[sel],
            t["w"][:, 1:].to(dev)[sel],
            clip_low=loss_cfg["clip_low"],
            clip_high=loss_cfg["clip_high"],
            tis_cap=loss_cfg.get("tis_cap"),
            dual_clip=loss_cfg.get("dual_clip"),
            kl_coef=loss_cfg["kl_coef"],
            ref_logp=ref,
            sequence_ids=rows,
            loss_mode=loss_cfg.get("policy_loss", "ppo"),
        )
        scale = 0.0 if dummy else float(ctx.world_size)  # FSDP2 averages gradients over ranks; L is a sum
        (parts.loss * scale).backward()
        if dummy:
            return
        sums["loss"] += float(parts.loss.detach())
        sums["tokens"] += int(sel.sum())
        sums["clipped"] += int(parts.clipped.sum())
        sums["kl"] += float(parts.kl_old.sum())
        sums["entropy"] += float(ent_all[sel].sum())
        sums["padded"] += padded
        # one optimiser step per batch: the pre-update logprob "old" is lp itself
        check.add(lp, mu, t["num"][:, 1:][sel.cpu()])

    # ---- checkpoints ----------------------------------------------------------------------------

    def _weights_state_dict(self) -> dict:
        """The full (unsharded) state dict the new version's weights are written from, on the CPU. A LoRA
        run gathers its adapter only: the frozen base never changes, and gathering it every step would
        move the whole model through the network and host memory."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        lora = hasattr(self.model, "peft_config")
        opts = StateDictOptions(full_state_dict=True, cpu_offload=True, ignore_frozen_params=lora)
        return get_model_state_dict(self.model, options=opts)

    def _checkpoint(self, version: int, key: str, result: dict, started: float) -> dict:
        """Weights of the new version (gathered once, written by rank 0), train state, then state.json."""
        ctx = self.ctx
        run_dir = self.run_dir(self.run["run_id"])
        wdir = run_dir / "weights" / f"v{version}"
        full = self._weights_state_dict()
        weights = None
        if ctx.is_main:
            wdir.parent.mkdir(parents=True, exist_ok=True)
            fmt = write_weights(self.model, full, wdir, base_path=self.base_path, save_dtype=self.save_dtype)
            weights = {
                "version": version,
                "format": fmt,
                "path": str(wdir.resolve()),
                "files": file_entries(wdir),
            }
        del full
        train_name = f"train-v{version}"
        keep = self.cfg.save_train_state
        if keep:
            self._save_train_state(run_dir / train_name)
        result["weights"] = weights
        result["checkpoint"] = str((run_dir / train_name).resolve()) if keep else None
        result["seconds"] = time.perf_counter() - started
        if ctx.is_main and keep:
            state = {
                "version": version,
                "last": {"key": key, "result": result},
                "weights": weights,
                "model": self.run["model"],
                "train_state": train_name,
            }
            tmp = run_dir / "state.json.tmp"
            tmp.write_text(json.dumps(state, allow_nan=False))
            os.replace(tmp, run_dir / "state.json")
        if ctx.is_main:
            self._prune(run_dir, version)
        result = ctx.broadcast(result)
        self.version, self.last, self.weights = version, {"key": key, "result": result}, result["weights"]
        ctx.barrier()
        return result

    def _prune(self, run_dir: Path, version: int) -> None:
        for d in run_dir.glob("train-v*"):
            if d.name != f"train-v{version}":
                shutil.rmtree(d, ignore_errors=True)
        for d in (run_dir / "weights").glob("v*"):
            m = re.fullmatch(r"v(\d+)", d.name)
            if m and int(m.group(1)) <= version - self.cfg.keep_versions:
                shutil.rmtree(d, ignore_errors=True)

    def _save_train_state(self, folder: Path) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

        msd, osd = get_state_dict(self.model, self.optim, options=StateDictOptions(ignore_frozen_params=True))
        tmp = folder.with_name(folder.name + ".tmp")
        if self.ctx.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
        self.ctx.barrier()
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(tmp))
        self.ctx.barrier()
        if self.ctx.is_main:
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
        self.ctx.barrier()

    def _load_train_state(self, folder: Path) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

        if not folder.is_dir():
            raise TrainerError(f"checkpoint folder {folder} is missing", field="run.run_id")
        opts = StateDictOptions(ignore_frozen_params=True)
        msd, osd = get_state_dict(self.model, self.optim, options=opts)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=str(folder))
        opts = StateDictOptions(
            ignore_frozen_params=True, strict=False
        )  # the frozen base comes from the model path
        set_state_dict(
            self.model,
            self.optim,
            model_state_dict=state["model"],
            optim_state_dict=state["optim"],
            options=opts,
        )


def legacy_agreement(v: dict | None) -> dict:
    """The metrics names the node protocol documents (node.ts TrainerStepResult), from the StepValidation."""
    if v is None:
        return {
            "logprob_abs_diff_mean": None,
            "logprob_abs_diff_max": None,
            "logprob_corr": None,
            "logprob_tokens": 0.0,
        }
    return {
        "logprob_abs_diff_mean": v["logprob_diff_mean"],
        "logprob_abs_diff_max": v["logprob_diff_max"],
        "logprob_corr": v["prob_correlation"],
        "logprob_tokens": float(v["tokens"]),
    }
