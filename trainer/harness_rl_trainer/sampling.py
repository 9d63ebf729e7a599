"""Sampling as vLLM 0.34 does it, for the CPU stand-in (serve.py): server defaults from the model's
generation_config.json, a request's own values first, penalties, temperature, min-p, top-k/p in vLLM's
order, and the logprob of the raw or the processed distribution."""

from __future__ import annotations

import argparse
import sys

import torch

# vLLM's own defaults for the fields a request and the server leave unset
# (vllm/entrypoints/openai/chat_completion/protocol.py:707 _DEFAULT_SAMPLING_PARAMS).
NEUTRAL_SAMPLING = {
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
}
_GREEDY_BELOW = 1e-5  # vllm/sampling_params.py _SAMPLING_EPS: a lower temperature is greedy


def generation_defaults(source: str, model_dir: str) -> dict:
    """The server-wide sampling defaults, as vLLM's ModelConfig.get_diff_sampling_param
    (vllm/config/model.py:1884) reads them: with ``--generation-config auto`` (the default) the
    sampling fields of the model folder's generation_config.json that differ from transformers'
    defaults (GenerationConfig.to_diff_dict), ``vllm`` none, or a folder path that folder's file.
    Requests that leave a field out get these (Qwen3: temperature 0.6, top_k 20, top_p 0.95)."""
    if source == "vllm":
        return {}
    from transformers import GenerationConfig

    try:
        config = GenerationConfig.from_pretrained(model_dir if source == "auto" else source).to_diff_dict()
    except OSError:
        return {}
    return {k: config[k] for k in NEUTRAL_SAMPLING if config.get(k) is not None}


def request_sampling(body: dict, defaults: dict) -> dict:
    """The sampling parameters of a request: its own value, else the server default, else vLLM's
    (priority "user -> server default -> OpenAI default", chat_completion/protocol.py:755)."""
    out = {}
    for k, neutral in NEUTRAL_SAMPLING.items():
        v = body.get(k)
        out[k] = type(neutral)(v if v is not None else defaults.get(k, neutral))
    if out["temperature"] < _GREEDY_BELOW:  # greedy: truncation is moot (sampling_params.py:619)
        out.update(top_p=1.0, top_k=0, min_p=0.0)
    return out


def log_request(rid: str, p: dict, n: int, seed, max_tokens: int) -> None:
    """vLLM's ``--enable-log-requests`` line (entrypoints/serve/utils/request_logger.py:67, the fields
    of SamplingParams.__repr__ that decide the distribution, sampling_params.py:1450)."""
    params = (
        f"SamplingParams(n={n}, presence_penalty={p['presence_penalty']}, "
        f"frequency_penalty={p['frequency_penalty']}, repetition_penalty={p['repetition_penalty']}, "
        f"temperature={p['temperature']}, top_p={p['top_p']}, top_k={p['top_k']}, min_p={p['min_p']}, "
        f"seed={seed}, max_tokens={max_tokens})"
    )
    print(f"Received request {rid}: params: {params}, lora_request: None.", file=sys.stderr, flush=True)


def _penalized(logits: torch.Tensor, ids: list[int], prompt_len: int, p: dict) -> torch.Tensor:
    """Repetition (prompt and output tokens), presence and frequency (output tokens) penalties."""
    if p["repetition_penalty"] == 1.0 and p["presence_penalty"] == 0.0 and p["frequency_penalty"] == 0.0:
        return logits
    x = logits.clone()
    if p["repetition_penalty"] != 1.0 and ids:
        seen = torch.tensor(sorted(set(ids)))
        v = x[seen]
        x[seen] = torch.where(v > 0, v / p["repetition_penalty"], v * p["repetition_penalty"])
    out = ids[prompt_len:]
    if out:
        counts = torch.bincount(torch.tensor(out), minlength=x.numel()).to(x.dtype)
        x -= p["frequency_penalty"] * counts + p["presence_penalty"] * (counts > 0).to(x.dtype)
    return x


def _truncated(x: torch.Tensor, p: dict) -> torch.Tensor:
    """min-p, then top-k and top-p (vLLM's order: v1/worker/gpu/sample/sampler.py:259-273)."""
    if p["min_p"] > 0:
        probs = torch.softmax(x, -1)
        x = x.masked_fill(probs < p["min_p"] * probs.max(), float("-inf"))
    k = int(p["top_k"])
    if 0 < k < x.numel():
        x = x.masked_fill(x < torch.topk(x, k).values[-1], float("-inf"))
    if p["top_p"] < 1.0:
        order = torch.argsort(x, descending=True)
        probs = torch.softmax(x[order], -1)
        drop = torch.cumsum(probs, -1) - probs >= p["top_p"]  # vLLM: ascending cumsum <= 1 - top_p
        x = x.clone()
        x[order[drop]] = float("-inf")
    return x


def sample_token(
    logits: torch.Tensor, ids: list[int], prompt_len: int, p: dict, gen, logprobs_mode: str
) -> tuple[int, float]:
    """One token and its logprob. ``raw_logprobs`` (vLLM's default, config/model.py:305) gives the
    logprob under the model's own distribution, before penalties, temperature and truncation, whatever
    was sampled from; ``processed_logprobs`` the one under the distribution actually sampled from."""
    x = _penalized(logits, ids, prompt_len, p)
    if p["temperature"] < _GREEDY_BELOW:
        tok = int(torch.argmax(x))
    else:
        x = _truncated(x / p["temperature"], p)
        tok = int(torch.multinomial(torch.softmax(x, -1), 1, generator=gen))
    source = x if logprobs_mode == "processed_logprobs" else logits
    return tok, float(torch.log_softmax(source, -1)[tok])


def add_sampling_flags(p: argparse.ArgumentParser) -> None:
    """vLLM's flags that decide what a request samples with and which logprobs it gets back."""
    p.add_argument(
        "--generation-config",
        default="auto",
        help="auto: the model folder's generation_config.json supplies the sampling defaults (vLLM's "
        "default); vllm: neutral defaults; or a folder with a generation_config.json",
    )
    p.add_argument(
        "--logprobs-mode",
        default="raw_logprobs",
        choices=["raw_logprobs", "processed_logprobs"],
        help="raw_logprobs (vLLM's default): before penalties, temperature and truncation",
    )
    p.add_argument(
        "--enable-log-requests",
        action="store_true",
        help="print each request's sampling parameters to stderr, as vLLM does",
    )
