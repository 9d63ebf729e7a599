"""The trainer in-process: a step lowers the loss, micro-batching is exact, checkpoints resume, keys are idempotent."""

from __future__ import annotations

import math

import pytest
import torch
from safetensors.torch import load_file

from harness_rl_trainer.engine import Trainer, TrainerConfig, micro_batches
from harness_rl_trainer.frames import unpack_samples
from harness_rl_trainer.model import TrainerError

from .helpers import LOSS, make_samples, train_header, with_mu

LORA = {"rank": 8, "alpha": 16}


def open_trainer(tmp_path, model, lora=None, run_id="run", **cfg) -> Trainer:
    t = Trainer(TrainerConfig(checkpoint_dir=tmp_path, grad_ckpt=cfg.pop("grad_ckpt", True), **cfg))
    spec = {"name": "tiny", "path": str(model), **({"lora": lora} if lora else {})}
    t.open({"run_id": run_id, "model": spec, "seed": 0})
    return t


def step(t: Trainer, n: int, samples, loss=None, key=None):
    h, payload = train_header(t.run["run_id"], n, samples, loss, key)
    return t.train(h, unpack_samples(h["samples"], payload))


def weights(result) -> dict[str, torch.Tensor]:
    w = result["weights"]
    name = "adapter_model.safetensors" if w["format"] == "lora" else "model.safetensors"
    return load_file(f"{w['path']}/{name}")


def assert_same_weights(a, b, tol, mean_tol=None):
    """Every tensor within ``tol`` (max abs) and, over all, a mean abs difference within ``mean_tol``."""
    assert a.keys() == b.keys()
    total, count = 0.0, 0
    for k in a:
        d = (a[k].double() - b[k].double()).abs()
        assert float(d.max()) <= tol, f"{k}: max diff {float(d.max())}"
        total, count = total + float(d.sum()), count + d.numel()
    if mean_tol is not None:
        assert total / count <= mean_tol, f"mean abs diff {total / count}"
    return total / count


def with_rollout_logprobs(t: Trainer, samples):
    """The trainer's own logprobs as the rollout's, on response tokens (ratio 1 at the first step)."""
    lps = t.logprobs([s["input_ids"] for s in samples])
    for s, lp in zip(samples, lps, strict=True):
        s["old_logprobs"] = [None] + [v if m else None for v, m in zip(lp, s["loss_mask"][1:], strict=True)]
    return samples


def test_micro_batches_respect_the_budget():
    groups = micro_batches([10, 3, 7, 7, 2], budget=14)
    assert sorted(i for g in groups for i in g) == [0, 1, 2, 3, 4]
    assert all(max([10, 3, 7, 7, 2][i] for i in g) * len(g) <= 14 or len(g) == 1 for g in groups)


@pytest.mark.parametrize("lora", [None, LORA], ids=["full", "lora"])
def test_one_step_lowers_the_loss_on_a_fixed_batch(tmp_path, tiny_model, lora):
    t = open_trainer(tmp_path, tiny_model, lora)
    samples = with_rollout_logprobs(t, make_samples(t.vocab))
    loss = {**LOSS, "learning_rate": 3e-3}
    r0 = step(t, 0, samples, loss)
    r1 = step(t, 1, samples, loss)
    assert r1["loss"] < r0["loss"] - 1e-4, (r0["loss"], r1["loss"])
    v = r0["validation"]  # same weights on both sides
    assert v["tokens"] == r0["tokens"] and v["logprob_diff_max"] < 1e-5
    assert v["prob_correlation"] > 0.9999 and v["tis_weight_mean"] == pytest.approx(1, abs=1e-5)
    assert r0["metrics"]["logprob_abs_diff_max"] == v["logprob_diff_max"]
    assert r1["model_version"] == 2 and r1["weights"]["version"] == 2
    files = {f["name"] for f in r1["weights"]["files"]}
    if lora:
        assert files == {"adapter_config.json", "adapter_model.safetensors"}
    else:
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= files


@pytest.mark.parametrize("ratio", ["token", "sequence"])
def test_micro_batching_and_grad_ckpt_do_not_change_the_step(tmp_path, tiny_model, ratio):
    # sequence (GSPO): bypass against made-up rollout logprobs, so each sample has its own ratio s
    samples = make_samples(512, n=5) if ratio == "token" else with_mu(make_samples(512, n=5))
    loss = None if ratio == "token" else {**LOSS, "tis_cap": None, "policy_ratio": "sequence"}
    a = open_trainer(tmp_path / "a", tiny_model, token_budget=100_000, grad_ckpt=False)
    b = open_trainer(
        tmp_path / "b", tiny_model, token_budget=20, grad_ckpt=True
    )  # one sample per micro-batch
    ra, rb = step(a, 0, samples, loss), step(b, 0, samples, loss)
    assert rb["metrics"]["micro_batches"] == 5 and ra["metrics"]["micro_batches"] == 1
    assert ra["loss"] == pytest.approx(rb["loss"], abs=1e-6)
    assert ra["metrics"]["grad_norm"] == pytest.approx(rb["metrics"]["grad_norm"], rel=1e-4)
    # Adam's first step is ~lr·sign(g): on gradients near its eps, float summation order moves a weight by
    # up to ~1e-3·lr (measured 1e-5 at lr 1e-2); the mean difference stays ~1e-8
    assert_same_weights(weights(ra), weights(rb), 1e-4, mean_tol=1e-7)


def test_checkpoint_resume_and_a_repeated_key(tmp_path, tiny_model):
    s0, s1 = make_samples(512, seed=1), make_samples(512, seed=2)
    straight = open_trainer(tmp_path / "straight", tiny_model, LORA)
    step(straight, 0, s0)
    want = step(straight, 1, s1)

    first = open_trainer(tmp_path / "resumed", tiny_model, LORA)
    r0 = step(first, 0, s0)
    del first
    again = Trainer(TrainerConfig(checkpoint_dir=tmp_path / "resumed"))
    opened = again.open(
        {"run_id": "run", "model": {"name": "tiny", "path": str(tiny_model), "lora": LORA}, "seed": 0}
    )
    assert opened["version"] == 1 and opened["last"]["key"] == "run:0"
    assert opened["weights"] == r0["weights"]
    # the same step again (same key) is answered from the checkpoint, not applied
    assert step(again, 0, s0) == r0
    assert again.version == 1
    got = step(again, 1, s1)
    assert got["model_version"] == 2
    assert_same_weights(weights(got), weights(want), 1e-6)  # optimiser state came back too


def test_bad_runs_are_refused_with_the_field(tmp_path, tiny_model):
    t = Trainer(TrainerConfig(checkpoint_dir=tmp_path))
    with pytest.raises(TrainerError, match="LoRA rank 513 is outside 1..512") as e:
        t.open(
            {
                "run_id": "r",
                "model": {"name": "m", "path": str(tiny_model), "lora": {"rank": 513, "alpha": 8}},
                "seed": 0,
            }
        )
    assert e.value.field == "run.model.lora.rank"
    with pytest.raises(TrainerError, match="does not exist") as e:
        t.open({"run_id": "r", "model": {"name": "m", "path": str(tmp_path / "nowhere")}, "seed": 0})
    assert e.value.field == "run.model.path"


def test_dual_clip_from_the_batch_caps_negative_advantages(tmp_path, tiny_model):
    """``loss.dual_clip`` reaches the loss: a ratio of e⁵ on A = −1 tokens costs c, not e⁵."""
    t = open_trainer(tmp_path, tiny_model, LORA)
    samples = with_rollout_logprobs(t, make_samples(t.vocab))
    for s in samples:  # A = −1 samples were sampled at 5 nats less: ratio e⁵ there
        if s["advantages"][-1] < 0:
            s["old_logprobs"] = [None if v is None else v - 5.0 for v in s["old_logprobs"]]
    loss = {**LOSS, "tis_cap": None}
    capped = step(t, 0, samples, {**loss, "dual_clip": 3.0}, key="run:capped")
    # token-mean over T = 40: A = +1 samples (10 + 12 tokens) cost −1 each, A = −1 ones (11 + 13) cost 3
    assert capped["loss"] == pytest.approx((-22 + 3 * 24) / 40, abs=1e-4)
    t2 = open_trainer(tmp_path / "plain", tiny_model, LORA)
    plain = step(t2, 0, samples, loss)
    assert plain["loss"] == pytest.approx((-22 + torch.e**5 * 24) / 40, rel=1e-3)


def test_a_lora_rank_vllm_has_no_preset_for_trains(tmp_path, tiny_model):
    """vLLM serves any adapter rank up to its --max-lora-rank (vllm/lora/peft_helper.py:201), not only
    the presets of vllm/config/lora.py:26: a rank-12 adapter is served by --max-lora-rank 16."""
    t = open_trainer(tmp_path, tiny_model, {"rank": 12, "alpha": 24})
    r = step(t, 0, make_samples(t.vocab))
    assert t.model.peft_config["default"].r == 12 and r["weights"]["format"] == "lora"


def test_a_lora_step_gathers_only_the_adapter(tmp_path, tiny_model):
    t = open_trainer(tmp_path, tiny_model, LORA)
    state = t._weights_state_dict()
    trainable = {n for n, p in t.model.named_parameters() if p.requires_grad}
    assert state and all("lora_" in k for k in state) and len(state) == len(trainable)
    full = open_trainer(tmp_path / "full", tiny_model)
    assert len(full._weights_state_dict()) == len(dict(full.model.named_parameters()))


def test_the_trainer_logprob_at_temperature_t_is_log_softmax_of_logits_over_t(tmp_path, tiny_model):
    t = open_trainer(tmp_path, tiny_model, LORA)
    ids = make_samples(t.vocab, n=1)[0]["input_ids"]
    with torch.no_grad():
        logits = t.model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    for temp in (1.0, 0.6, 1.7):
        want = torch.log_softmax(logits / temp, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1))
        got = t.logprobs([ids], temperatures=[temp])[0]
        assert got == pytest.approx(want.squeeze(-1).tolist(), abs=1e-5)


def test_a_sample_temperature_divides_the_logits_in_the_step(tmp_path, tiny_model):
    """Rollout logprobs taken at T = 0.6 agree with the trainer when the sample says T = 0.6, not without."""
    t = open_trainer(tmp_path, tiny_model, LORA)
    samples = make_samples(t.vocab)
    lps = t.logprobs([s["input_ids"] for s in samples], temperatures=[0.6] * len(samples))
    for s, lp in zip(samples, lps, strict=True):
        s["old_logprobs"] = [None] + [v if m else None for v, m in zip(lp, s["loss_mask"][1:], strict=True)]
    told = step(t, 0, [{**s, "temperature": 0.6} for s in samples], key="run:t")
    assert told["validation"]["logprob_diff_max"] < 1e-5
    untold = open_trainer(tmp_path / "b", tiny_model, LORA)
    assert step(untold, 0, samples)["validation"]["logprob_diff_max"] > 0.05


def test_sequence_ratio_from_the_batch_takes_each_samples_mean_log_ratio(tmp_path, tiny_model):
    """``loss.policy_ratio: sequence`` (GSPO) reaches the loss: each sample's tokens share s = exp(mean d_t)."""
    t = open_trainer(tmp_path, tiny_model, LORA)
    samples = with_rollout_logprobs(t, make_samples(t.vocab))
    # bypass: d_t = lp_t − μ_t = m_i ± 0.3 (mean m_i): sample 0, 2 (A = +1) m = 0.1, sample 1 (A = −1)
    # m = 0.05, sample 3 (A = −1) m = −0.5, so s = e^−0.5 < 1 − ε_low: its 13 tokens are clipped
    means = [0.1, 0.05, 0.1, -0.5]
    for s, m in zip(samples, means, strict=True):
        k = 0
        n = sum(v is not None for v in s["old_logprobs"])
        for j, v in enumerate(s["old_logprobs"]):
            if v is None:
                continue
            c = 0.0 if (n % 2 and k == n - 1) else (0.3 if k % 2 == 0 else -0.3)
            s["old_logprobs"][j] = v - (m + c)
            k += 1
    loss = {**LOSS, "tis_cap": None, "policy_ratio": "sequence"}
    r = step(t, 0, samples, loss, key="run:gspo")
    # token-mean over T = 40: A = +1 samples (10 + 12 tokens) cost −e^0.1, sample 1 (11) e^0.05, sample 3 (13) 0.8
    want = (-22 * math.exp(0.1) + 11 * math.exp(0.05) + 13 * 0.8) / 40
    assert r["loss"] == pytest.approx(want, rel=1e-3)
    assert r["clip_fraction"] == pytest.approx(13 / 46)
    assert math.isfinite(r["metrics"]["grad_norm"])
    # token mode on the same batch differs: its ±0.3 tokens clip one by one
    t2 = open_trainer(tmp_path / "token", tiny_model, LORA)
    plain = step(t2, 0, samples, {**loss, "policy_ratio": "token"})
    assert abs(plain["loss"] - want) > 1e-2
    assert plain["clip_fraction"] != pytest.approx(13 / 46)


def test_cispo_from_the_batch_trains_where_ppo_clip_cannot(tmp_path, tiny_model):
    """``loss.policy_loss: cispo`` reaches the loss: every ratio out of range, PPO-clip has no gradient."""
    t = open_trainer(tmp_path, tiny_model, LORA)
    samples = with_rollout_logprobs(t, make_samples(t.vocab))
    # bypass: lp_t − μ_t = +0.5 on A = +1 samples (r = e^0.5 > 1.28), −0.5 on A = −1 (r = e^−0.5 < 0.8)
    want = 0.0
    for s in samples:
        for j, v in enumerate(s["old_logprobs"]):
            if v is None:
                continue
            a, w = s["advantages"][j], s["loss_weights"][j]
            s["old_logprobs"][j] = v - 0.5 * a
            want -= w * (1.28 if a > 0 else 0.8) * a * v  # ℓ = −clip(r)·A·lp
    loss = {**LOSS, "tis_cap": None, "policy_loss": "cispo"}
    r = step(t, 0, samples, loss, key="run:cispo")
    assert r["loss"] == pytest.approx(want, rel=1e-3)
    assert r["clip_fraction"] == 1.0
    assert r["metrics"]["grad_norm"] > 1e-3
    # PPO-clip on the same batch: every token clipped, no gradient
    t2 = open_trainer(tmp_path / "ppo", tiny_model, LORA)
    plain = step(t2, 0, samples, {**loss, "policy_loss": "ppo"})
    assert plain["clip_fraction"] == 1.0
    assert plain["metrics"]["grad_norm"] == 0.0
