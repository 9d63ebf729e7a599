"""The policy loss against the shared test vectors (daemon/samples/vectors.json) that the TS engine passes."""

from __future__ import annotations

import json
import math

import pytest
import torch

from harness_rl_trainer.loss import kl_k3, policy_loss, ppo_clip_token_loss, truncated_is_weight
from harness_rl_trainer.validation import scatter_indices, step_validation

from .helpers import REPO

V = json.loads((REPO / "daemon" / "samples" / "vectors.json").read_text())
t64 = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731


def test_ppo_clip_matches_vectors():
    p = V["policy_loss"]
    loss, clipped = ppo_clip_token_loss(
        t64(p["logp"]), t64(p["old_logp"]), t64(p["advantage"]), p["clip_low"], p["clip_high"]
    )
    assert loss.tolist() == pytest.approx(p["loss"], abs=1e-12)
    assert clipped.tolist() == p["clipped"]
    parts = policy_loss(
        t64(p["logp"]),
        t64(p["old_logp"]),
        t64(p["advantage"]),
        t64(p["weights"]),
        clip_low=p["clip_low"],
        clip_high=p["clip_high"],
    )
    assert float(parts.loss) == pytest.approx(p["total"], abs=1e-6)
    assert abs(float(parts.loss) - p["total"]) < 1e-12
    assert parts.clipped.tolist() == p["clipped"]


def test_tis_and_kl_match_vectors():
    for c in V["tis"]["cases"]:
        w = truncated_is_weight(t64(c["trainer_old_logp"]), t64(c["inference_logp"]), V["tis"]["cap"])
        assert float(w) == pytest.approx(c["weight"], abs=1e-12)
    for c in V["kl_k3"]:
        assert float(kl_k3(t64(c["logp"]), t64(c["ref_logp"]))) == pytest.approx(c["kl"], abs=1e-12)


def reference_token(lp, mu, a, w, ref, cfg):
    """spec/samples.md's per-token loss, read literally: the value and d/dlp (old = lp, one update)."""
    known = math.isfinite(mu) and mu > -9999
    clamp20 = lambda x: max(-20.0, min(20.0, x))  # noqa: E731
    x, slope = 0.0, 1.0  # log r = lp − old = 0 in value, slope 1 in lp
    if cfg["tis_cap"] is None and known:
        x, slope = clamp20(lp - mu), (1.0 if abs(lp - mu) <= 20 else 0.0)
    ratio = math.exp(x)
    clipped_r = min(max(ratio, 1 - cfg["clip_low"]), 1 + cfg["clip_high"])
    loss = -min(ratio * a, clipped_r * a)
    clipped = (a > 0 and ratio > 1 + cfg["clip_high"]) or (a < 0 and ratio < 1 - cfg["clip_low"])
    g = 0.0 if clipped else -ratio * a * slope
    tis = min(math.exp(clamp20(lp - mu)), cfg["tis_cap"]) if cfg["tis_cap"] is not None and known else 1.0
    loss, g = loss * tis, g * tis
    if cfg["kl_coef"] > 0:
        d = ref - lp
        loss += cfg["kl_coef"] * (math.exp(d) - d - 1)
        g += cfg["kl_coef"] * (1 - math.exp(ref - lp))
    return w * loss, w * g


@pytest.mark.parametrize("tis_cap,kl_coef", [(None, 0.0), (2.0, 0.0), (2.0, 0.1), (1.2, 0.5)])
def test_full_loss_and_gradient_match_the_spec(tis_cap, kl_coef):
    gen = torch.Generator().manual_seed(1)
    n = 64
    lp = -torch.rand(n, generator=gen, dtype=torch.float64) * 3
    mu = lp + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5)
    mu[::5] = float("nan")  # unknown rollout logprobs
    mu[1::7] = -9999.0  # vLLM's floor: unknown too
    mu[3] = lp[3] - 25.0  # a log-ratio past the ±20 clamp
    a = torch.randn(n, generator=gen, dtype=torch.float64)
    w = torch.rand(n, generator=gen, dtype=torch.float64) / n
    ref = lp + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 0.2
    cfg = {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": tis_cap, "kl_coef": kl_coef}
    x = lp.clone().requires_grad_(True)
    parts = policy_loss(
        x, mu, a, w, clip_low=0.2, clip_high=0.28, tis_cap=tis_cap, kl_coef=kl_coef, ref_logp=ref
    )
    parts.loss.backward()
    want = [reference_token(*map(float, (lp[i], mu[i], a[i], w[i], ref[i])), cfg) for i in range(n)]
    assert float(parts.loss.detach()) == pytest.approx(sum(v for v, _ in want), rel=1e-12, abs=1e-9)
    assert x.grad.tolist() == pytest.approx([g for _, g in want], abs=1e-9)


def opt(v):
    return float("nan") if v is None else v


def run_case(case, **extra):
    """policy_loss on a shared vector case (with ``extra`` arguments); its parts and d/dlp by autograd."""
    cfg = case["loss"]
    x = t64(case["logp"]).requires_grad_(True)
    parts = policy_loss(
        x,
        t64([opt(v) for v in case["rollout_logp"]]),
        t64(case["advantage"]),
        t64(case["weights"]),
        old_logp=t64(case["old_logp"]),
        clip_low=cfg["clip_low"],
        clip_high=cfg["clip_high"],
        tis_cap=cfg["tis_cap"],
        dual_clip=cfg["dual_clip"],
        **extra,
    )
    parts.loss.backward()
    return parts, x.grad


@pytest.mark.parametrize("case", V["token_loss"], ids=lambda c: c["name"])
def test_token_loss_cases_match_the_shared_vectors(case):
    """The per-token loss, its gradient, clip flags and TIS weights of each case of vectors.json."""
    parts, grad = run_case(case)
    e = case["expected"]
    assert parts.token_loss.tolist() == pytest.approx(e["token_loss"], rel=1e-12, abs=1e-12)
    assert grad.tolist() == pytest.approx(e["grad"], rel=1e-12, abs=1e-12)
    assert parts.clipped.tolist() == e["clipped"]
    assert parts.tis_weight.tolist() == pytest.approx(e["tis_weight"], rel=1e-12)
    assert float(parts.loss.detach()) == pytest.approx(e["total"], rel=1e-12)


@pytest.mark.parametrize("case", V["token_loss"], ids=lambda c: c["name"])
def test_step_validation_matches_the_shared_vectors(case):
    got = step_validation(
        t64(case["old_logp"]), t64([opt(v) for v in case["rollout_logp"]]), case["loss"]["tis_cap"]
    )
    want = case["validation"]
    if want is None:
        assert got is None
        return
    assert got.keys() == want.keys()
    assert got["tokens"] == want["tokens"]
    for k in ("logprob_diff_mean", "logprob_diff_max", "tis_weight_mean", "tis_capped_fraction"):
        assert got[k] == pytest.approx(want[k], rel=1e-12), k
    assert got["prob_correlation"] == pytest.approx(want["prob_correlation"], rel=1e-9)
    flat = lambda pairs: [v for pair in pairs for v in pair]  # noqa: E731
    assert flat(got["scatter"]) == pytest.approx(flat(want["scatter"]), rel=1e-12)


def test_the_scatter_subsample_matches_the_shared_vectors():
    sc = V["scatter"]
    assert scatter_indices(sc["n"], sc["max"]).tolist() == sc["indices"]
    assert scatter_indices(5).tolist() == [0, 1, 2, 3, 4]


def test_a_large_mismatch_weighs_the_gradient_by_min_ratio_cap_not_its_square():
    """Decoupled PPO at lp = old: ∂ℓ/∂lp = −A · min(π/μ, C). Applying the correction twice (the ratio
    against μ, then TIS) gave (π/μ)·min(π/μ, C) for A < 0, and no gradient for A > 0 (a clipped ratio)."""
    lp0 = math.log(0.5)
    for pi_over_mu, want in ((1.5, 1.5), (math.e**3, 2.0), (0.5, 0.5)):
        for a in (1.0, -1.0):
            x = t64([lp0]).requires_grad_(True)
            parts = policy_loss(x, t64([lp0 - math.log(pi_over_mu)]), t64([a]), t64([1.0]), tis_cap=2.0)
            parts.loss.backward()
            assert float(x.grad) == pytest.approx(-a * want, rel=1e-12), (pi_over_mu, a)
    # bypass: the ratio against μ itself, no weight (π/μ = 1.5 on the pessimistic side, A < 0)
    x = t64([lp0]).requires_grad_(True)
    policy_loss(x, t64([lp0 - math.log(1.5)]), t64([-1.0]), t64([1.0]), tis_cap=None).loss.backward()
    assert float(x.grad) == pytest.approx(1.5, rel=1e-12)


def test_vllm_floor_and_absent_rollout_logprobs_are_unknown():
    x = t64([-1.0, -1.0, -1.0])
    parts = policy_loss(
        x, t64([-9999.0, float("nan"), -10000.0]), t64([1.0] * 3), t64([1.0] * 3), tis_cap=2.0
    )
    assert parts.tis_weight.tolist() == [1.0, 1.0, 1.0]  # not min(e^20, 2) = 2


def test_dual_clip_caps_negative_advantage_loss():
    loss, _ = ppo_clip_token_loss(t64([2.0, 2.0]), t64([0.0, 0.0]), t64([-1.0, 1.0]), dual_clip=3.0)
    assert loss.tolist() == pytest.approx([3.0, -1.28])


@pytest.mark.parametrize("case", V["sequence_loss"], ids=lambda c: c["name"])
def test_sequence_ratio_cases_match_the_shared_vectors(case):
    """GSPO (policy_ratio "sequence"): values by the loss, the gradient d/dlp by autograd, as TS has them."""
    assert case["loss"]["policy_ratio"] == "sequence"
    parts, grad = run_case(case, sequence_ids=torch.tensor(case["sequence_ids"]))
    e = case["expected"]
    assert parts.token_loss.tolist() == pytest.approx(e["token_loss"], rel=1e-12, abs=1e-12)
    assert grad.tolist() == pytest.approx(e["grad"], rel=1e-12, abs=1e-12)
    assert parts.clipped.tolist() == e["clipped"]
    assert parts.tis_weight.tolist() == pytest.approx(e["tis_weight"], rel=1e-12)
    assert float(parts.loss.detach()) == pytest.approx(e["total"], rel=1e-12)
    # kl_old stays the per-token k3 of each token's own log-ratio d_t
    d = torch.tensor(e["log_ratio"], dtype=torch.float64)
    assert parts.kl_old.tolist() == pytest.approx((torch.exp(d) - d - 1).tolist(), rel=1e-12, abs=1e-15)


def test_sequence_ids_in_any_order_and_one_token_sequences_are_token_mode():
    """Sequence ids need not be sorted or contiguous; a sequence of one token is token mode."""
    lp = t64([-0.5, -1.0, -0.2, -0.7]).requires_grad_(True)
    old, mu, adv, w = (
        t64([-0.9, -1.2, -0.4, -0.3]),
        t64([-1.0, -1.1, -0.4, -0.5]),
        t64([1, -1, 1, -1]),
        t64([1] * 4),
    )
    common = {"old_logp": old, "tis_cap": 2.0}
    seq = policy_loss(lp, mu, adv, w, sequence_ids=torch.tensor([7, 3, 7, 3]), **common)
    # sequence 7: tokens 0, 2 (d 0.4, 0.2: log s 0.3); sequence 3: tokens 1, 3 (d 0.2, −0.4: log s −0.1)
    moved = t64([0.3, -0.1, 0.3, -0.1])
    tok = policy_loss(moved + old, mu, adv, w, **common)  # token mode at log-ratio log s
    assert seq.token_loss.tolist() == pytest.approx(tok.token_loss.tolist(), rel=1e-12)
    single = policy_loss(lp, mu, adv, w, sequence_ids=torch.arange(4), **common)
    plain = policy_loss(lp, mu, adv, w, **common)
    assert single.token_loss.tolist() == pytest.approx(plain.token_loss.tolist(), rel=1e-14)
    with pytest.raises(ValueError, match="sequence_ids"):
        policy_loss(lp, mu, adv, w, sequence_ids=torch.tensor([0, 1]), **common)


@pytest.mark.parametrize("case", V["cispo_loss"], ids=lambda c: c["name"])
def test_cispo_cases_match_the_shared_vectors(case):
    """CISPO (policy_loss "cispo"): values by the loss, the gradient d/dlp by autograd, as TS has them."""
    assert case["loss"]["policy_loss"] == "cispo"
    parts, grad = run_case(case, loss_mode="cispo")
    e = case["expected"]
    assert parts.token_loss.tolist() == pytest.approx(e["token_loss"], rel=1e-12, abs=1e-12)
    assert grad.tolist() == pytest.approx(e["grad"], rel=1e-12, abs=1e-12)
    assert parts.clipped.tolist() == e["clipped"]
    assert parts.tis_weight.tolist() == pytest.approx(e["tis_weight"], rel=1e-12)
    assert float(parts.loss.detach()) == pytest.approx(e["total"], rel=1e-12)
    # PPO-clip on the same tokens: the vectors' ppo_grad (0 where a clipped token loses its gradient)
    _, ppo_grad = run_case(case, loss_mode="ppo")
    assert ppo_grad.tolist() == pytest.approx(e["ppo_grad"], rel=1e-12, abs=1e-12)


def test_cispo_refuses_the_sequence_ratio_and_unknown_modes():
    lp, mu, adv, w = t64([-0.5, -1.0]), t64([-0.6, -0.9]), t64([1, -1]), t64([0.5, 0.5])
    with pytest.raises(ValueError, match="sequence_ids"):
        policy_loss(lp, mu, adv, w, sequence_ids=torch.tensor([0, 0]), loss_mode="cispo")
    with pytest.raises(ValueError, match="loss_mode"):
        policy_loss(lp, mu, adv, w, loss_mode="reinforce")
