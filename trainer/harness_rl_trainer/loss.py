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
# vLLM 0.34 floors a logprob it cannot represent (−inf, NaN) at −9999 in its OpenAI responses:
# `max(step_token.logprob, -9999.0)`, vllm/entrypoints/openai/chat_completion/serving.py:1275 and
# vllm/entrypoints/openai/completion/serving.py:833. Such a rollout logprob is unknown, like an absent one.
VLLM_LOGPROB_FLOOR = -9999.0
LOG_RATIO_CLAMP = 20.0


@dataclass
class LossParts:
    """The batch loss and its per-token pieces (all over the tokens passed in)."""

    loss: torch.Tensor  # scalar, differentiable: Σ_t w_t · ℓ_t
    token_loss: torch.Tensor  # ℓ_t (after the TIS weight and the KL term)
    clipped: torch.Tensor  # bool: the clipped PPO term wins (no gradient through the ratio)
    kl_old: torch.Tensor  # k3 of KL(ratio denominator || current) per token, detached
    tis_weight: torch.Tensor  # the truncated IS weight per token (1 where not applied)


def known_logprob(mu: torch.Tensor) -> torch.Tensor:
    """Where a rollout logprob μ is known: finite and above vLLM's −9999 floor."""
    return torch.isfinite(mu) & (mu > VLLM_LOGPROB_FLOOR)


def clamp20(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)


def ppo_clip_from_log_ratio(
    log_ratio: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Per-token PPO-clip loss and the clipped mask, from log r.

    ℓ_t = −min(r_t · A_t, clip(r_t, 1 − ε_low, 1 + ε_high) · A_t)
    clipped_t = (A_t > 0 ∧ r_t > 1 + ε_high) ∨ (A_t < 0 ∧ r_t < 1 − ε_low)

    Dual clip (Ye et al. 2020, off unless ``dual_clip`` = c > 1 is given): for A_t < 0 the loss is
    capped at −c · A_t, i.e. ℓ_t = min(ℓ_t, −c · A_t), so a huge ratio on a negative advantage cannot
    blow up the step.
    """
    ratio = torch.exp(log_ratio)
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = -torch.minimum(ratio * advantages, clipped_ratio * advantages)
    if dual_clip is not None:
        if dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
        capped = torch.minimum(loss, -dual_clip * advantages)
        loss = torch.where(advantages < 0, capped, loss)
    clipped = ((advantages > 0) & (ratio > 1.0 + clip_high)) | ((advantages < 0) & (ratio < 1.0 - clip_low))
    return loss, clipped


def ppo_clip_token_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO-clip with r_t = exp(logp_t − old_t) (the vectors' ``policy_loss`` section)."""
    return ppo_clip_from_log_ratio(logp - old_logp, advantages, clip_low, clip_high, dual_clip)


def truncated_is_weight(
    trainer_old_logp: torch.Tensor, inference_logp: torch.Tensor, cap: float = TIS_CAP
) -> torch.Tensor:
    """w = min(exp(clamp20(trainer_old_logp − inference_logp)), cap)."""
    return torch.clamp(torch.exp(clamp20(trainer_old_logp - inference_logp)), max=cap)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(π || π_ref) per token: exp(ref − logp) − (ref − logp) − 1 (≥ 0)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def cispo_token_loss(
    log_ratio: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""CISPO's per-token loss and the clipped mask (MiniMax-M1, arXiv:2506.13585; verl's loss_mode cispo).

    ŵ_t = sg(clip(r_t, 1 − ε_low, 1 + ε_high)),  ℓ_t = −ŵ_t · A_t · lp_t,  clipped_t = ŵ_t ≠ r_t

    The weight is detached, so every token keeps the gradient −ŵ_t · A_t (PPO-clip drops a clipped
    token's); the value is verl's (the logprob, not the ratio, carries the gradient). No dual clip.
    """
    ratio = torch.exp(log_ratio.detach())
    weight = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    return -weight * advantages * logp, weight != ratio


def sequence_log_ratio(log_ratio: torch.Tensor, sequence_ids: torch.Tensor) -> torch.Tensor:
    """x_t = d_t − sg(d_t) + sg(mean of d over t's sequence): GSPO-token's per-token log-ratio."""
    if sequence_ids.shape != log_ratio.shape:
        raise ValueError(f"sequence_ids {tuple(sequence_ids.shape)} != log-ratios {tuple(log_ratio.shape)}")
    d = log_ratio.detach()
    _, inverse, counts = torch.unique(sequence_ids, return_inverse=True, return_counts=True)
    sums = torch.zeros(counts.shape, dtype=d.dtype, device=d.device).index_add_(0, inverse, d)
    log_s = (sums / counts.to(d.dtype))[inverse]
    return log_ratio - d + log_s


def policy_loss(
    logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    old_logp: torch.Tensor | None = None,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    tis_cap: float | None = None,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    dual_clip: float | None = None,
    sequence_ids: torch.Tensor | None = None,
    loss_mode: str = "ppo",
) -> LossParts:
    r"""The batch policy loss L = Σ_t w_t · ℓ_t over the tokens given (mask-1 tokens; w from the daemon).

    lp_t = ``logp`` (the trainer's logprob, differentiable); old_t = ``old_logp``, the trainer's own
    logprob before the update, detached (default stopgrad(lp_t): one optimiser step per batch);
    μ_t = ``rollout_logp``, unknown where NaN or at vLLM's −9999 floor; A_t = ``advantages``.
    The behaviour correction is applied once:

      decoupled (tis_cap = C):  r_t = exp(lp_t − old_t),
                                ℓ_t = PPO(r_t, A_t) · min(exp(clamp20(old_t − μ_t)), C)   (1 where μ unknown)
      bypass (tis_cap = None):  r_t = exp(clamp20(lp_t − μ_t)) where μ known, else exp(lp_t − old_t);
                                ℓ_t = PPO(r_t, A_t)
      PPO(r, A) = −min(r·A, clip(r, 1 − ε_low, 1 + ε_high)·A), capped at −c·A for A < 0 with dual clip c
      ℓ_t += kl_coef · (exp(ref_t − lp_t) − (ref_t − lp_t) − 1)   where kl_coef > 0 (k3 to the reference)

    Sequence ratio (GSPO, Zheng et al. 2025; ``sequence_ids`` given, an integer per token naming its
    sequence, i.e. its training sample): with d_t the token's log-ratio above (decoupled lp_t − old_t,
    bypass clamp20(lp_t − μ_t) or lp_t − old_t where μ_t is unknown),

      log s_i = mean of d_t over sequence i's tokens (detached),   x_t = d_t − sg(d_t) + log s_i,
      ℓ_t = PPO(exp(x_t), A_t) (· the TIS weight in decoupled mode, as above)

    so the value uses s_i and the gradient runs through the token's own lp_t: dℓ_t/dlp_t = −s_i·A_t·w_t
    unless clipped (0 where clamp20 cut d_t). With seq-mean-token-mean weights this is GSPO's objective
    and gradient. ``clipped`` then marks the tokens of clipped sequences; ``kl_old`` stays per token (d_t).

    CISPO (``loss_mode`` "cispo", the run's algorithm.policy_loss; token ratio only, dual_clip ignored as
    verl does): r_t as above, ℓ_t = −sg(clip(r_t, 1 − ε_low, 1 + ε_high)) · A_t · lp_t (· the TIS weight in
    decoupled mode), so dℓ_t/dlp_t = −clip(r_t) · A_t · w_t on every token, a clipped or clamped one
    included; ``clipped`` marks the tokens whose weight was cut (cispo_token_loss).

    Also returned: the clipped mask (clip fraction), k3 of the ratio (KL of its denominator to the
    current policy) and the TIS weight per token.
    """
    lp_detached = logp.detach()
    old = lp_detached if old_logp is None else old_logp.detach().to(logp.dtype)
    mu = rollout_logp.to(logp.dtype)
    known = known_logprob(mu)
    safe_mu = torch.where(known, mu, old)
    adv = advantages.to(logp.dtype)
    if tis_cap is not None:
        log_ratio = logp - old
        tis = torch.where(known, truncated_is_weight(old, safe_mu, tis_cap), torch.ones_like(old))
    else:
        log_ratio = torch.where(known, clamp20(logp - safe_mu), logp - old)
        tis = torch.ones_like(old)
    if loss_mode == "cispo":
        if sequence_ids is not None:
            raise ValueError("loss_mode cispo takes the token ratio, not sequence_ids (GSPO)")
        token_loss, clipped = cispo_token_loss(log_ratio, logp, adv, clip_low, clip_high)
    elif loss_mode == "ppo":
        ratio_input = log_ratio if sequence_ids is None else sequence_log_ratio(log_ratio, sequence_ids)
        token_loss, clipped = ppo_clip_from_log_ratio(ratio_input, adv, clip_low, clip_high, dual_clip)
    else:
        raise ValueError(f"loss_mode must be ppo or cispo (got {loss_mode!r})")
    token_loss = token_loss * tis
    if kl_coef > 0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        token_loss = token_loss + kl_coef * kl_k3(logp, ref_logp.to(logp.dtype))
    loss = (weights.to(logp.dtype) * token_loss).sum()
    x = log_ratio.detach()
    kl_old = torch.exp(x) - x - 1.0
    return LossParts(loss=loss, token_loss=token_loss, clipped=clipped, kl_old=kl_old, tis_weight=tis)
