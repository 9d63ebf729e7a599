"""The stand-in vLLM's engine: one transformers model on the CPU, LoRA adapters by name, and token-by-token
greedy or sampled decoding with the raw model's logprobs (serve.py answers HTTP with it)."""

from __future__ import annotations

import threading

import torch

from .sampling import generation_defaults, sample_token
from .vllm_rules import ApiError, VllmOptions


class Engine:
    """One model (plus LoRA adapters by name), greedy or sampled decoding, raw-model logprobs."""

    def __init__(
        self,
        model_dir: str,
        served_name: str | None,
        enable_lora: bool,
        max_model_len: int = 2048,
        max_lora_rank: int = 16,
        generation_config: str = "auto",
        logprobs_mode: str = "raw_logprobs",
        log_requests: bool = False,
        vllm: VllmOptions | None = None,
    ):
        from transformers import AutoTokenizer

        self.sampling_defaults = generation_defaults(generation_config, model_dir)
        self.logprobs_mode = logprobs_mode
        self.log_requests = log_requests
        self.lock = threading.Lock()
        self.vllm = vllm or VllmOptions()
        self.paused = False
        self.enable_lora = enable_lora
        self.max_lora_rank = max_lora_rank
        self.max_model_len = max_model_len
        self.model_dir = model_dir
        self.name = served_name or model_dir
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.adapters: dict[str, str] = {}
        self._load(model_dir)

    def _load(self, model_dir: str) -> None:
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.base, self.peft = base, None
        for name, path in list(self.adapters.items()):
            self._add_adapter(name, path)

    def _add_adapter(self, name: str, path: str) -> None:
        from peft import PeftModel

        if self.peft is None:
            self.peft = PeftModel.from_pretrained(self.base, path, adapter_name=name).eval()
        else:
            if name in self.peft.peft_config:
                self.peft.delete_adapter(name)
            self.peft.load_adapter(path, adapter_name=name)
        self.adapters[name] = path

    def model_for(self, name: str):
        if name == self.name:
            if self.peft is not None:
                return _NoAdapter(self.peft)
            return self.base
        if name in self.adapters:
            self.peft.set_adapter(name)
            return self.peft
        raise ApiError(404, f"The model `{name}` does not exist.", "NotFoundError")

    def generate(self, model, prompt: list[int], n: int, max_tokens: int, params: dict, seed, stop_ids):
        """Per choice: (token ids, their logprobs, finish_reason); ``params`` from request_sampling."""
        gen = torch.Generator().manual_seed(int(seed)) if seed is not None else None
        out = []
        for _ in range(n):
            ids = list(prompt)
            toks, lps, finish = [], [], "length"
            with model if isinstance(model, _NoAdapter) else _nullctx():
                m = model.model if isinstance(model, _NoAdapter) else model
                for _ in range(max_tokens):
                    if len(ids) >= self.max_model_len:
                        break
                    with torch.no_grad():
                        logits = m(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
                    tok, lp = sample_token(logits, ids, len(prompt), params, gen, self.logprobs_mode)
                    ids.append(tok)
                    toks.append(tok)
                    lps.append(lp)
                    if tok in stop_ids:
                        finish = "stop"
                        break
            out.append((toks, lps, finish))
        return out


class _NoAdapter:
    """The base model of a PeftModel with every adapter switched off."""

    def __init__(self, peft):
        self.model = peft
        self._ctx = None

    def __enter__(self):
        self._ctx = self.model.disable_adapter()
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
