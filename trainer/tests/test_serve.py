"""The CPU vLLM stand-in: vLLM's response shapes, logprobs that agree with the trainer, adapter hot-load."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from harness_rl_trainer.serve import make_server

from .helpers import make_samples
from .test_trainer import LORA, open_trainer, step


@pytest.fixture(scope="module")
def server(tiny_model):
    s = make_server(str(tiny_model), served_name="tiny", enable_lora=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{s.server_address[1]}"
    s.shutdown()


def post(url, body, raw=False):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            data = r.read().decode()
            return r.status, (data if raw else json.loads(data))
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def sse(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        lines = [ln for ln in r.read().decode().split("\n\n") if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(ln[6:]) for ln in lines[:-1]]


def test_chat_and_completions_shapes(server):
    with urllib.request.urlopen(f"{server}/v1/models") as r:
        assert json.loads(r.read())["data"][0]["id"] == "tiny"
    msgs = [{"role": "user", "content": "hello there"}]
    st, chat = post(
        f"{server}/v1/chat/completions",
        {
            "model": "tiny",
            "messages": msgs,
            "max_tokens": 5,
            "temperature": 0,
            "logprobs": True,
            "return_token_ids": True,
        },
    )
    assert st == 200 and chat["object"] == "chat.completion"
    c = chat["choices"][0]
    assert len(c["token_ids"]) == len(c["logprobs"]["content"]) and chat["prompt_token_ids"]
    _, tokd = post(f"{server}/tokenize", {"model": "tiny", "messages": msgs})
    assert tokd["tokens"] == chat["prompt_token_ids"]
    chunks = sse(
        f"{server}/v1/chat/completions",
        {
            "model": "tiny",
            "messages": msgs,
            "max_tokens": 5,
            "temperature": 0,
            "stream": True,
            "logprobs": True,
            "return_token_ids": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert chunks[0]["prompt_token_ids"] == chat["prompt_token_ids"]
    assert [t for ch in chunks[1:] for c in ch["choices"] for t in c.get("token_ids", [])] == c["token_ids"]
    assert chunks[-1]["usage"]["completion_tokens"] == len(c["token_ids"])
    st, cmpl = post(
        f"{server}/v1/completions",
        {
            "model": "tiny",
            "prompt": chat["prompt_token_ids"],
            "max_tokens": 5,
            "temperature": 0,
            "logprobs": 0,
            "return_token_ids": True,
        },
    )
    assert cmpl["choices"][0]["token_ids"] == c["token_ids"]
    assert cmpl["choices"][0]["prompt_token_ids"] == chat["prompt_token_ids"]
    _, detok = post(f"{server}/detokenize", {"model": "tiny", "tokens": c["token_ids"]})
    assert isinstance(detok["prompt"], str)
    st, err = post(f"{server}/v1/completions", {"model": "nope", "prompt": "x"})
    assert st == 404 and err["object"] == "error"


def test_logprobs_agree_with_the_trainer_and_adapters_hot_load(server, tiny_model, tmp_path):
    t = open_trainer(tmp_path, tiny_model, LORA)
    body = {
        "model": "tiny",
        "prompt": "The daemon trains",
        "max_tokens": 12,
        "temperature": 1.0,
        "seed": 3,
        "logprobs": 0,
        "return_token_ids": True,
        "ignore_eos": True,
    }
    _, base = post(f"{server}/v1/completions", body)
    ch = base["choices"][0]
    seq = ch["prompt_token_ids"] + ch["token_ids"]
    mine = t.logprobs([seq])[0][len(ch["prompt_token_ids"]) - 1 :]
    diff = [abs(a - b) for a, b in zip(mine, ch["logprobs"]["token_logprobs"], strict=True)]
    print(f"serve vs trainer logprobs (base): mean abs diff {sum(diff) / len(diff):.2e}, max {max(diff):.2e}")
    assert sum(diff) / len(diff) <= 1e-4

    r = step(
        t,
        0,
        make_samples(t.vocab),
        {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": None, "kl_coef": 0.0, "learning_rate": 0.05},
    )
    st, text = post(
        f"{server}/v1/load_lora_adapter", {"lora_name": "run@1", "lora_path": r["weights"]["path"]}, raw=True
    )
    assert st == 200 and "added successfully" in text
    st, _ = post(f"{server}/v1/load_lora_adapter", {"lora_name": "run@1", "lora_path": r["weights"]["path"]})
    assert st == 400  # already loaded, not in place
    _, tuned = post(f"{server}/v1/completions", {**body, "model": "run@1", "prompt": seq, "max_tokens": 1})
    _, again = post(f"{server}/v1/completions", {**body, "prompt": seq, "max_tokens": 1})
    assert (
        tuned["choices"][0]["logprobs"]["token_logprobs"] != again["choices"][0]["logprobs"]["token_logprobs"]
    )
    after = t.logprobs([seq])[0][len(ch["prompt_token_ids"]) - 1 :]
    _, tuned_seq = post(
        f"{server}/v1/completions",
        {**body, "model": "run@1", "prompt": ch["prompt_token_ids"], "max_tokens": 12},
    )
    tc = tuned_seq["choices"][0]
    mine2 = t.logprobs([ch["prompt_token_ids"] + tc["token_ids"]])[0][len(ch["prompt_token_ids"]) - 1 :]
    d2 = [abs(a - b) for a, b in zip(mine2, tc["logprobs"]["token_logprobs"], strict=True)]
    print(f"serve (adapter v1) vs trainer logprobs: mean abs diff {sum(d2) / len(d2):.2e}, max {max(d2):.2e}")
    assert sum(d2) / len(d2) <= 1e-4 and after != mine
    st, text = post(f"{server}/v1/unload_lora_adapter", {"lora_name": "run@1"}, raw=True)
    assert st == 200 and "removed successfully" in text


def test_full_weight_reload(server, tiny_model, tmp_path):
    t = open_trainer(tmp_path, tiny_model)
    r = step(
        t,
        0,
        make_samples(t.vocab),
        {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": None, "kl_coef": 0.0, "learning_rate": 0.05},
    )
    body = {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 1, "temperature": 0, "logprobs": 0}
    _, before = post(f"{server}/v1/completions", body)
    # vLLM 0.34's sequence (see test_serve_vllm_rules.py): pause, reload from the path, resume.
    assert post(f"{server}/pause?mode=wait", {})[0] == 200
    rpc = {"method": "reload_weights", "kwargs": {"weights_path": r["weights"]["path"]}}
    assert post(f"{server}/collective_rpc", rpc)[0] == 200
    assert post(f"{server}/resume", {})[0] == 200
    assert post(f"{server}/reset_prefix_cache", {}) == (200, {"success": True})
    _, after = post(f"{server}/v1/completions", body)
    assert (
        before["choices"][0]["logprobs"]["token_logprobs"]
        != after["choices"][0]["logprobs"]["token_logprobs"]
    )
    lp = t.logprobs(
        [[5, 6, 7, 8, after["choices"][0]["token_ids"][0] if "token_ids" in after["choices"][0] else 0]]
    )
    assert lp  # the trainer reads the same folder


def test_an_adapter_rank_above_max_lora_rank_is_refused_as_vllm_does(server, tiny_model, tmp_path):
    """vLLM 0.34 loads an adapter of any rank up to --max-lora-rank (default 16) and answers 500 with
    "LoRA rank R is greater than max_lora_rank M." beyond it (vllm/lora/peft_helper.py:201)."""
    for rank, status in ((12, 200), (32, 500)):
        t = open_trainer(tmp_path / str(rank), tiny_model, {"rank": rank, "alpha": 2 * rank})
        path = step(t, 0, make_samples(t.vocab))["weights"]["path"]
        st, body = post(
            f"{server}/v1/load_lora_adapter", {"lora_name": f"r{rank}", "lora_path": path}, raw=True
        )
        assert st == status, body
    assert body["message"] == "LoRA rank 32 is greater than max_lora_rank 16."


def test_tokenize_hands_chat_template_kwargs_to_the_template_as_vllm_does(tiny_model):
    """vLLM's /tokenize passes chat_template_kwargs (entrypoints/serve/tokenize/protocol.py:144)."""
    from transformers import AutoTokenizer

    from harness_rl_trainer.serve_responses import chat_ids

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = "{{ messages[0]['content'] }}{% if enable_thinking is defined and not enable_thinking %} off{% endif %}"
    body = {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": False}
    plain = chat_ids(tok, body)
    off = chat_ids(tok, {**body, "chat_template_kwargs": {"enable_thinking": False}})
    assert plain == tok.encode("hi", add_special_tokens=False)
    assert off == tok.encode("hi off", add_special_tokens=False)
