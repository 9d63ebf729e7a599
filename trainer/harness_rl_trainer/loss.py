"""The per-token policy loss of shared/spec/samples.md, as a pure function of tensors.

The TypeScript reference engine (daemon/samples/loss.ts, daemon/engine/trainer.ts) computes the same
numbers; tests/test_loss.py checks both against daemon/samples/vectors.json.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

CLIP_LOW = 0.2
CLIP_HIGH = 0.28
TIS_CAP = 2.0


@dataclass
class LossParts:
    """The batch loss and its per-token pieces (all over the tokens passed in)."""

    loss: torch.Tensor  # scalar, differentiable: Σ_t w_t · ℓ_t
    token_loss: torch.Tensor  # ℓ_t (after TIS and KL terms)
    clipped: torch.Tensor  # bool: the clipped PPO term wins (no gradient through the ratio)
    kl_old: torch.Tensor  # k3 of KL(old || current) per token, detached
    tis_weight: torch.Tensor  # the truncated IS factor per token (1 where not applied)


def ppo_clip_token_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Per-token PPO-clip loss and the clipped mask.

    ratio_t = exp(logp_t − old_t)
    ℓ_t = −min(ratio_t · A_t, clip(ratio_t, 1 − ε_low, 1 + ε_high) · A_t)
    clipped_t = (A_t > 0 ∧ ratio_t > 1 + ε_high) ∨ (A_t < 0 ∧ ratio_t < 1 − ε_low)

    Dual clip (Ye et al. 2020, off unless ``dual_clip`` = c > 1 is given): for A_t < 0 the loss is
    capped at −c · A_t, i.e. ℓ_t = min(ℓ_t, −c · A_t), so a huge ratio on a negative advantage cannot
    blow up the step. The shared vectors and the TypeScript engine use no dual clip.
    """
    ratio = torch.exp(logp - old_logp)
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = -torch.minimum(ratio * advantages, clipped_ratio * advantages)
    if dual_clip is not None:
        if dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
        capped = torch.minimum(loss, -dual_clip * advantages)
        loss = torch.where(advantages < 0, capped, loss)
    clipped = ((advantages > 0) & (ratio > 1.0 + clip_high)) | ((advantages < 0) & (ratio < 1.0 - clip_low))
    return loss, clipped


def truncated_is_weight(
    trainer_old_logp: torch.Tensor, inference_logp: torch.Tensor, cap: float = TIS_CAP
) -> torch.Tensor:
    """w = min(exp(trainer_old_logp − inference_logp), cap)."""
    return torch.clamp(torch.exp(trainer_old_logp - inference_logp), max=cap)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(π || π_ref) per token: exp(ref − logp) − (ref − logp) − 1 (≥ 0)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def policy_loss(
    logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    tis_cap: float | None = None,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    dual_clip: float | None = None,
) -> LossParts:
    r"""The batch policy loss L = Σ_t w_t · ℓ_t over the tokens given (mask-1 tokens; w from the daemon).

    With lp_t = ``logp`` (the trainer's logprob of token t, differentiable), ro_t = ``rollout_logp``
    (the inference engine's logprob; NaN where unknown), A_t = ``advantages``, w_t = ``weights``:

        old_t  = ro_t if finite else stopgrad(lp_t)
        ℓ_t    = −min(r_t · A_t, clip(r_t, 1 − ε_low, 1 + ε_high) · A_t),   r_t = exp(lp_t − old_t)
                 (capped at −c · A_t for A_t < 0 with dual clip c)
        ℓ_t   *= min(exp(stopgrad(lp_t) − ro_t), tis_cap)   where tis_cap is set and ro_t is finite
        ℓ_t   += kl_coef · (exp(ref_t − lp_t) − (ref_t − lp_t) − 1)   where kl_coef > 0 (k3 to the reference)
        L      = Σ_t w_t · ℓ_t

    The TIS factor uses the trainer's own pre-update logprob (one optimiser step per batch, so
    stopgrad(lp_t) is that logprob) and carries no gradient, as daemon/engine/trainer.ts does.
    Also returned: the clipped mask (clip fraction) and k3 of KL(old || current) per token.
    """
    lp_detached = logp.detach()
    known = torch.isfinite(rollout_logp)
    old = torch.where(known, rollout_logp.to(logp.dtype), lp_detached)
    token_loss, clipped = ppo_clip_token_loss(
        logp, old, advantages.to(logp.dtype), clip_low, clip_high, dual_clip
    )
    if tis_cap is not None:
        safe_ro = torch.where(known, rollout_logp.to(logp.dtype), lp_detached)
        tis = torch.where(
            known, truncated_is_weight(lp_detached, safe_ro, tis_cap), torch.ones_like(lp_detached)
        )
    else:
        tis = torch.ones_like(lp_detached)
    token_loss = token_loss * tis
    if kl_coef > 0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        token_loss = token_loss + kl_coef * kl_k3(logp, ref_logp.to(logp.dtype))
    w = weights.to(logp.dtype)
    loss = (w * token_loss).sum()
    kl_old = kl_k3(old.detach(), lp_detached)  # k3(old, lp) = exp(lp − old) − (lp − old) − 1
    return LossParts(loss=loss, token_loss=token_loss, clipped=clipped, kl_old=kl_old, tis_weight=tis)
