"""FSDP2 for real: the trainer under `torchrun --nproc-per-node 2` on gloo equals a single-process step."""

from __future__ import annotations

import time

import pytest
from peft import PeftModel
from transformers import AutoModelForCausalLM

from .helpers import StdioTrainer, make_samples, train_header, with_mu
from .test_trainer import LORA, assert_same_weights, open_trainer, step, weights


def test_sharded_steps_equal_single_process(tmp_path, tiny_model):
    batches = [with_mu(make_samples(512, n=5, seed=s), seed=s) for s in (1, 2, 3)]
    proc = StdioTrainer(tmp_path / "sharded", nproc=2, extra=["--token-budget", "40"])
    try:
        assert proc.call({"t": "hello", "protocol_version": 1})["t"] == "welcome"
        sharded = {}
        for name, lora in (("lora", LORA), ("full", None)):
            spec = {"name": "tiny", "path": str(tiny_model), **({"lora": lora} if lora else {})}
            opened = proc.call(
                {"t": "open", "id": f"o-{name}", "run": {"run_id": name, "model": spec, "seed": 0}}
            )
            assert opened["t"] == "opened", opened
            for i, b in enumerate(batches):
                h, payload = train_header(name, i, b)
                reply = proc.call(h, payload)
                assert reply["t"] == "trained", reply
            sharded[name] = reply["result"]
            assert reply["result"]["metrics"]["world_size"] == 2
    finally:
        assert proc.close() == 0

    for name, lora in (("lora", LORA), ("full", None)):
        single = open_trainer(tmp_path / "single", tiny_model, lora, run_id=name, token_budget=40)
        for i, b in enumerate(batches):
            want = step(single, i, b)
        got = sharded[name]
        assert got["loss"] == pytest.approx(want["loss"], abs=1e-6)
        assert got["tokens"] == want["tokens"]
        assert got["metrics"]["grad_norm"] == pytest.approx(want["metrics"]["grad_norm"], rel=1e-4)
        assert_same_validation(got["validation"], want["validation"])
        # tolerance: see test_micro_batching_and_grad_ckpt_do_not_change_the_step (Adam near eps)
        mean = assert_same_weights(weights(got), weights(want), 2e-4, mean_tol=1e-6)
        print(f"{name}: sharded vs single mean abs weight diff {mean:.2e}")

    lora_b = [v for k, v in weights(sharded["lora"]).items() if "lora_B" in k]
    assert lora_b and all(float(v.abs().max()) > 0 for v in lora_b)  # it trained (B starts at zero)

    # the adapter saved from the sharded model loads back with peft
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    loaded = PeftModel.from_pretrained(base, sharded["lora"]["weights"]["path"])
    assert loaded.peft_config["default"].r == LORA["rank"]
    full = AutoModelForCausalLM.from_pretrained(sharded["full"]["weights"]["path"])
    assert full.config.num_hidden_layers == 2


def assert_same_validation(got: dict, want: dict) -> None:
    """A step's StepValidation does not depend on how its tokens were split over ranks."""
    assert got["tokens"] == want["tokens"] > 0
    for k in ("logprob_diff_mean", "logprob_diff_max", "prob_correlation", "tis_weight_mean"):
        assert got[k] == pytest.approx(want[k], rel=1e-5), k
    assert got["tis_capped_fraction"] == want["tis_capped_fraction"]
    assert len(got["scatter"]) == len(want["scatter"]) == got["tokens"]
    assert [p for pair in got["scatter"] for p in pair] == pytest.approx(
        [p for pair in want["scatter"] for p in pair], rel=1e-5
    )


def test_two_ranks_one_micro_batch_after_a_wait_longer_than_the_step_timeout(tmp_path, tiny_model):
    """Rank 1 gets no micro-batch of its own (one sample, two ranks): it joins with a zero-weight copy
    instead of raising IndexError. Before the batch both ranks idle longer than the collectives' timeout
    (NCCL's watchdog on a GPU, here gloo's with HARNESS_RL_STEP_TIMEOUT_S): the followers wait on the
    control group, whose timeout is long, and the step runs."""
    batch = with_mu(make_samples(512, n=1, seed=4), seed=4)
    proc = StdioTrainer(tmp_path / "sharded", nproc=2, env={"HARNESS_RL_STEP_TIMEOUT_S": "10"})
    try:
        assert proc.call({"t": "hello", "protocol_version": 1})["t"] == "welcome"
        spec = {"name": "tiny", "path": str(tiny_model)}
        opened = proc.call({"t": "open", "id": "o", "run": {"run_id": "one", "model": spec, "seed": 0}})
        assert opened["t"] == "opened", opened
        time.sleep(14)
        h, payload = train_header("one", 0, batch)
        reply = proc.call(h, payload)
        assert reply["t"] == "trained", reply
        got = reply["result"]
    finally:
        assert proc.close() == 0
    assert got["metrics"]["micro_batches"] == 1 and got["metrics"]["world_size"] == 2
    want = step(open_trainer(tmp_path / "single", tiny_model, None, run_id="one"), 0, batch)
    assert got["loss"] == pytest.approx(want["loss"], abs=1e-6)
    assert got["metrics"]["grad_norm"] == pytest.approx(want["metrics"]["grad_norm"], rel=1e-4)
    assert_same_validation(got["validation"], want["validation"])
