"""The policy loss against the shared test vectors (daemon/samples/vectors.json) that the TS engine passes."""

from __future__ import annotations

import json
import math

import pytest
import torch

from harness_rl_trainer.loss import kl_k3, policy_loss, ppo_clip_token_loss, truncated_is_weight

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


def reference_token(lp, ro, a, w, ref, cfg):
    """daemon/engine/trainer.ts's per-token loss, transcribed: the value and d/dlogp."""
    old = ro if math.isfinite(ro) else lp
    ratio = math.exp(lp - old)
    clipped_r = min(max(ratio, 1 - cfg["clip_low"]), 1 + cfg["clip_high"])
    loss = -min(ratio * a, clipped_r * a)
    clipped = (a > 0 and ratio > 1 + cfg["clip_high"]) or (a < 0 and ratio < 1 - cfg["clip_low"])
    g = 0.0 if clipped else -ratio * a
    tis = min(math.exp(lp - ro), cfg["tis_cap"]) if cfg["tis_cap"] is not None and math.isfinite(ro) else 1.0
    loss, g = loss * tis, g * tis
    if cfg["kl_coef"] > 0:
        d = ref - lp
        loss += cfg["kl_coef"] * (math.exp(d) - d - 1)
        g += cfg["kl_coef"] * (1 - math.exp(ref - lp))
    return w * loss, w * g


@pytest.mark.parametrize("tis_cap,kl_coef", [(None, 0.0), (2.0, 0.0), (2.0, 0.1), (1.2, 0.5)])
def test_full_loss_and_gradient_match_the_ts_engine(tis_cap, kl_coef):
    gen = torch.Generator().manual_seed(1)
    n = 64
    lp = -torch.rand(n, generator=gen, dtype=torch.float64) * 3
    ro = lp + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5)
    ro[::5] = float("nan")  # unknown rollout logprobs
    a = torch.randn(n, generator=gen, dtype=torch.float64)
    w = torch.rand(n, generator=gen, dtype=torch.float64) / n
    ref = lp + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 0.2
    cfg = {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": tis_cap, "kl_coef": kl_coef}
    x = lp.clone().requires_grad_(True)
    parts = policy_loss(
        x, ro, a, w, clip_low=0.2, clip_high=0.28, tis_cap=tis_cap, kl_coef=kl_coef, ref_logp=ref
    )
    parts.loss.backward()
    want = [reference_token(*map(float, (lp[i], ro[i], a[i], w[i], ref[i])), cfg) for i in range(n)]
    assert float(parts.loss.detach()) == pytest.approx(sum(v for v, _ in want), abs=1e-9)
    assert x.grad.tolist() == pytest.approx([g for _, g in want], abs=1e-9)


def test_dual_clip_caps_negative_advantage_loss():
    loss, _ = ppo_clip_token_loss(t64([2.0, 2.0]), t64([0.0, 0.0]), t64([-1.0, 1.0]), dual_clip=3.0)
    assert loss.tolist() == pytest.approx([3.0, -1.28])
