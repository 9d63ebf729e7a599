"""The stand-in samples as vLLM 0.34 does: defaults from generation_config.json, raw logprobs."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request

import pytest
import torch

from harness_rl_trainer.sampling import generation_defaults, request_sampling, sample_token
from harness_rl_trainer.serve import make_server

QWEN3_SAMPLING = {"temperature": 0.6, "top_k": 20, "top_p": 0.95}


@pytest.fixture(scope="module")
def qwen3_like(tiny_model, tmp_path_factory):
    """The tiny model with Qwen3's generation_config.json sampling fields."""
    d = tmp_path_factory.mktemp("qwen3-like") / "model"
    shutil.copytree(tiny_model, d)
    cfg = (
        json.loads((d / "generation_config.json").read_text())
        if (d / "generation_config.json").exists()
        else {}
    )
    (d / "generation_config.json").write_text(json.dumps({**cfg, **QWEN3_SAMPLING, "do_sample": True}))
    return d


def served(model_dir, **kw):
    s = make_server(str(model_dir), served_name="tiny", **kw)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s, f"http://127.0.0.1:{s.server_address[1]}"


def chat(url, **extra):
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "hello there"}],
        "max_tokens": 40,
        "ignore_eos": True,
        "seed": 1,
        "logprobs": True,
        "return_token_ids": True,
        **extra,
    }
    req = urllib.request.Request(
        f"{url}/v1/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(req) as r:
        out = json.loads(r.read())
    c = out["choices"][0]
    return out["prompt_token_ids"], c["token_ids"], [e["logprob"] for e in c["logprobs"]["content"]]


def raw_logprobs(engine, prompt, tokens):
    """The model's own log-softmax at each sampled position: (logprob of the token, its rank)."""
    with torch.no_grad():
        logits = engine.base(input_ids=torch.tensor([prompt + tokens]), use_cache=False).logits[0].float()
    lsm = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
    got = lsm.gather(1, torch.tensor(tokens)[:, None])[:, 0]
    ranks = (lsm > got[:, None]).sum(-1)
    return got.tolist(), ranks.tolist()


def test_generation_config_supplies_what_a_request_leaves_out(qwen3_like, tmp_path):
    # vllm/config/model.py:1884 get_diff_sampling_param: only the sampling fields, only non-defaults
    assert generation_defaults("auto", str(qwen3_like)) == QWEN3_SAMPLING
    assert generation_defaults("vllm", str(qwen3_like)) == {}
    assert generation_defaults("auto", str(tmp_path)) == {}  # no file: none
    p = request_sampling({"temperature": 1.0}, QWEN3_SAMPLING)
    assert (p["temperature"], p["top_k"], p["top_p"], p["min_p"]) == (1.0, 20, 0.95, 0.0)
    assert request_sampling({"temperature": 0}, QWEN3_SAMPLING)["top_k"] == 0  # greedy


def test_a_request_without_sampling_fields_samples_from_top_k_20_and_gets_raw_logprobs(qwen3_like, capfd):
    s, url = served(qwen3_like, log_requests=True)
    try:
        prompt, tokens, lps = chat(url)
        assert "temperature=0.6, top_p=0.95, top_k=20, min_p=0.0" in capfd.readouterr().err
        raw, ranks = raw_logprobs(s.engine, prompt, tokens)
        assert max(ranks) < 20  # truncated to the 20 most likely tokens
        assert lps == pytest.approx(raw, abs=1e-4)  # logprobs of the untruncated T=1 distribution
        # the same request with the neutral values the proxy sends: any of the 512 tokens can come
        prompt, tokens, lps = chat(url, temperature=1, top_k=0, top_p=1, min_p=0)
        assert "temperature=1.0, top_p=1.0, top_k=0, min_p=0.0" in capfd.readouterr().err
        raw, ranks = raw_logprobs(s.engine, prompt, tokens)
        assert max(ranks) >= 20
        assert lps == pytest.approx(raw, abs=1e-4)
    finally:
        s.shutdown()


def test_generation_config_vllm_leaves_the_neutral_defaults(qwen3_like):
    s, url = served(qwen3_like, generation_config="vllm")
    try:
        prompt, tokens, _ = chat(url)
        assert max(raw_logprobs(s.engine, prompt, tokens)[1]) >= 20
    finally:
        s.shutdown()


def test_processed_logprobs_describe_the_distribution_sampled_from():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    p = request_sampling({"temperature": 0.5, "top_k": 2}, {})
    gen = torch.Generator().manual_seed(0)
    tok, raw = sample_token(logits, [], 0, p, gen, "raw_logprobs")
    assert raw == pytest.approx(float(torch.log_softmax(logits, -1)[tok]))
    gen = torch.Generator().manual_seed(0)
    tok2, processed = sample_token(logits, [], 0, p, gen, "processed_logprobs")
    kept = torch.log_softmax(logits[:2] / 0.5, -1)
    assert tok2 == tok and tok in (0, 1) and processed == pytest.approx(float(kept[tok]))
