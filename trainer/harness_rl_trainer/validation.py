"""A step's train/inference agreement (StepValidation of daemon/protocol/training.ts, spec/samples.md).

Over the trained tokens whose rollout logprob μ is known: mean and max |old − μ|, the Pearson correlation
of exp(old) and exp(μ), the mean TIS weight min(exp(clamp20(old − μ)), C) (1 in bypass mode) and the share
at the cap, and a deterministic scatter subsample of (exp(μ), exp(old)) pairs. Tokens are numbered in
batch order, then position, before any micro-batching or sharding, so every world size gives the same
figures; ranks add their sums, take the max and pool their scatter points (at most 512 in all).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .frames import Samples
from .loss import LOG_RATIO_CLAMP, VLLM_LOGPROB_FLOOR

SCATTER_MAX = 512
_SUMS = ("diff", "tis", "capped")


def merge_moments(a: tuple, b: tuple) -> tuple:
    """Chan et al.'s pairwise merge of (n, mean x, mean y, M2x, M2y, Cxy): a robust Pearson across parts."""
    na, mxa, mya, sxa, sya, ca = a
    nb, mxb, myb, sxb, syb, cb = b
    n = na + nb
    if n == 0:
        return a
    dx, dy = mxb - mxa, myb - mya
    f = na * nb / n
    return (
        n,
        mxa + dx * nb / n,
        mya + dy * nb / n,
        sxa + sxb + dx * dx * f,
        sya + syb + dy * dy * f,
        ca + cb + dx * dy * f,
    )


def scatter_indices(n: int, limit: int = SCATTER_MAX) -> np.ndarray:
    """All of n tokens when n ≤ limit, else those at floor(i · n / limit) for i < limit."""
    if n <= limit:
        return np.arange(n, dtype=np.int64)
    return (np.arange(limit, dtype=np.int64) * n) // limit


def token_numbers(samples: Samples) -> np.ndarray:
    """Per token of the batch: its number among the trained tokens with a known μ (batch order), else −1.

    Trained: position ≥ 1 of its sample, mask 1 and a non-zero loss weight (the tokens the step trains).
    """
    n = len(samples.input_ids)
    first = np.zeros(n, dtype=bool)
    first[np.asarray(samples.offsets()[:-1], dtype=np.int64)] = True
    mu = samples.old_logprobs
    with np.errstate(invalid="ignore"):
        eligible = (
            ~first
            & (samples.loss_mask != 0)
            & (samples.loss_weights != 0)
            & np.isfinite(mu)
            & (mu > VLLM_LOGPROB_FLOOR)
        )
    return np.where(eligible, np.cumsum(eligible) - 1, -1)


class Validation:
    """Accumulates one rank's part of a step's StepValidation; ``result`` reduces over the ranks."""

    def __init__(self, numbers: np.ndarray, tis_cap: float | None):
        self.tis_cap = tis_cap
        total = int(numbers.max()) + 1 if numbers.size else 0
        self.picked = np.zeros(max(total, 1), dtype=bool)
        self.picked[scatter_indices(total)] = True
        self.sums = dict.fromkeys(_SUMS, 0.0)
        self.moments = (0, 0.0, 0.0, 0.0, 0.0, 0.0)
        self.max_diff = 0.0
        self.points: list[tuple[int, float, float]] = []

    def add(self, old: torch.Tensor, mu: torch.Tensor, numbers: torch.Tensor) -> None:
        """Tokens of one micro-batch: ``old`` the trainer's pre-update logprobs, ``mu`` the rollout's,
        ``numbers`` from token_numbers (−1: not counted)."""
        keep = numbers >= 0
        if not bool(keep.any()):
            return
        o = old.detach()[keep].double().cpu()
        m = mu.detach()[keep].double().cpu()
        idx = numbers[keep].cpu()
        x, y = torch.exp(o), torch.exp(m)
        diff = (o - m).abs()
        if self.tis_cap is None:
            w = torch.ones_like(o)
            capped = torch.zeros_like(o)
        else:
            w = torch.clamp(
                torch.exp(torch.clamp(o - m, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)), max=self.tis_cap
            )
            capped = (w >= self.tis_cap).double()
        for k, v in (("diff", diff), ("tis", w), ("capped", capped)):
            self.sums[k] += float(v.sum())
        mx, my = x.mean(), y.mean()
        part = (
            len(o),
            float(mx),
            float(my),
            float(((x - mx) ** 2).sum()),
            float(((y - my) ** 2).sum()),
            float(((x - mx) * (y - my)).sum()),
        )
        self.moments = merge_moments(self.moments, part)
        self.max_diff = max(self.max_diff, float(diff.max()))
        sel = torch.from_numpy(self.picked[idx.numpy()])
        for i, yy, xx in zip(idx[sel].tolist(), y[sel].tolist(), x[sel].tolist(), strict=True):
            self.points.append((i, yy, xx))

    def result(self, ctx) -> dict | None:
        """The StepValidation of the whole step (every rank calls it: it reduces across them)."""
        parts = ctx.all_gather((self.sums, self.max_diff, self.moments, self.points))
        sums = {k: sum(p[0][k] for p in parts) for k in _SUMS}
        moments = (0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for p in parts:
            moments = merge_moments(moments, p[2])
        points = sorted(q for p in parts for q in p[3])
        return summarize(sums, max(p[1] for p in parts), moments, points)


def summarize(
    s: dict, max_diff: float, moments: tuple, points: list[tuple[int, float, float]]
) -> dict | None:
    n, _, _, sxx, syy, sxy = moments
    if n == 0:
        return None
    corr = None
    if n > 1 and sxx > 0 and syy > 0:
        corr = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    return {
        "tokens": int(n),
        "logprob_diff_mean": s["diff"] / n,
        "logprob_diff_max": max_diff,
        "prob_correlation": corr,
        "tis_weight_mean": s["tis"] / n,
        "tis_capped_fraction": s["capped"] / n,
        "scatter": [[y, x] for _, y, x in points],
    }


def step_validation(old: torch.Tensor, mu: torch.Tensor, tis_cap: float | None) -> dict | None:
    """StepValidation of one flat list of trained tokens (one process; the shared vectors' form)."""
    from .dist import DistContext

    mu64 = mu.double()
    known = torch.isfinite(mu64) & (mu64 > VLLM_LOGPROB_FLOOR)
    numbers = torch.where(
        known, torch.cumsum(known.long(), 0) - 1, torch.full_like(known, -1, dtype=torch.long)
    )
    v = Validation(numbers.numpy(), tis_cap)
    v.add(old, torch.where(known, mu64, torch.zeros_like(mu64)), numbers)
    return v.result(DistContext())
