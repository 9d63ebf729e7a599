"""Loading a causal LM (full fine-tuning or a LoRA adapter), its per-token logprobs, and its weights on disk."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import torch

# vLLM 0.34 serves an adapter whose rank is at most the server's --max-lora-rank
# (vllm/lora/peft_helper.py:201, "LoRA rank {r} is greater than max_lora_rank"), and --max-lora-rank is
# one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (vllm/config/lora.py:26, MaxLoRARanks): any rank up to 512
# can be served by a server started with a --max-lora-rank at least as large.
VLLM_MAX_LORA_RANK = 512
VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class TrainerError(Exception):
    """A request the trainer cannot serve; ``field`` names the header field or file at fault."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def check_lora(lora: dict | None) -> None:
    if lora is None:
        return
    rank = lora["rank"]
    if not 1 <= rank <= VLLM_MAX_LORA_RANK:
        raise TrainerError(
            f"LoRA rank {rank} is outside 1..{VLLM_MAX_LORA_RANK} (vLLM's --max-lora-rank is at most {VLLM_MAX_LORA_RANK})",
            field="run.model.lora.rank",
        )


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# What the trainer reads of a hub model: config, tokenizer, weights (not other formats of the same weights).
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.py"]


def hub_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_cache() -> str:
    """The hub cache, read from the environment now (huggingface_hub reads it once, at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    return str(Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "hub")


def resolve_hub_id(repo_id: str, field: str) -> str:
    """The local snapshot folder of a hub model: from the cache when offline, downloaded (once) otherwise.
    A folder, not the id, so everything that reads the checkpoint (config.json's dtype too) reads the
    same files from_pretrained loads."""
    from huggingface_hub import snapshot_download

    cache = hub_cache()
    if hub_offline():
        try:
            return snapshot_download(repo_id, cache_dir=cache, local_files_only=True)
        except Exception:
            raise TrainerError(
                f"model {repo_id} is not in the hub cache ({cache}) and the hub is offline "
                "(HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE): download it first "
                f"(hf download {repo_id}) or give model.path as a folder",
                field=field,
            ) from None
    try:
        return snapshot_download(repo_id, cache_dir=cache, allow_patterns=HUB_FILES)
    except Exception as err:
        raise TrainerError(f"cannot fetch model {repo_id} from the hub: {err}", field=field) from None


def resolve_model_path(model: dict) -> str:
    """The local folder of model.path: a folder, or a hub id (Qwen/Qwen3-1.7B) resolved to its snapshot;
    without a path, model.name as a hub id."""
    path = model.get("path")
    if path:
        p = Path(path).expanduser()
        if p.is_dir():
            if not (p / "config.json").is_file():
                raise TrainerError(f"model path {path} has no config.json", field="run.model.path")
            return str(p)
        if HUB_ID.match(path):
            return resolve_hub_id(path, "run.model.path")
        raise TrainerError(
            f"model path {path} does not exist or is not a folder (nor a hub id like Qwen/Qwen3-1.7B)",
            field="run.model.path",
        )
    if not HUB_ID.match(model["name"]):
        raise TrainerError(
            f"no model path given and model.name {model['name']!r} is not a hub id", field="run.model.path"
        )
    return resolve_hub_id(model["name"], "run.model.path")


def load_model(
    model_spec: dict, *, grad_ckpt: bool = True, seed: int = 0, base_dtype: torch.dtype = torch.float32
):
    """The trainable model: trained weights in fp32 (master weights; bf16 compute comes from autocast or
    FSDP2 mixed precision). A LoRA run's frozen base is loaded in ``base_dtype`` (bf16 on a GPU: half the
    memory of fp32, and what its bf16 compute reads anyway); peft keeps the adapter itself in fp32."""
    from transformers import AutoModelForCausalLM

    check_lora(model_spec.get("lora"))
    path = resolve_model_path(model_spec)
    torch.manual_seed(seed)
    dtype = base_dtype if model_spec.get("lora") else torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    except (OSError, ValueError) as err:
        raise TrainerError(f"cannot load model from {path}: {err}", field="run.model.path") from None
    model.config.use_cache = False
    lora = model_spec.get("lora")
    if lora:
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(
            r=lora["rank"],
            lora_alpha=lora["alpha"],
            target_modules=LORA_TARGETS,
            lora_dropout=0.0,
            bias="none",
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, cfg, autocast_adapter_dtype=True)
    if grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, path


def checkpoint_dtype(path: str) -> torch.dtype:
    """The dtype the base checkpoint is stored in (weights are written back in it)."""
    try:
        cfg = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return torch.float32
    name = cfg.get("dtype") or cfg.get("torch_dtype") or "float32"
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(str(name), torch.float32)


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks (each becomes one FSDP2 unit)."""
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def token_logprobs(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    with_entropy: bool = False,
    temperature: torch.Tensor | None = None,
):
    """logp[b, t] = log p(input_ids[b, t+1] | input_ids[b, :t+1]) for t < L−1 (fp32); optionally the entropy.

    ``temperature`` (one per row) divides the logits before the log-softmax: the rollout logprobs of a
    sample taken at temperature T describe softmax(logits / T) (spec/samples.md).
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
    z = logits[:, :-1].float()
    if temperature is not None and bool((temperature != 1).any()):  # T = 1 costs no copy of the logits
        z = z / temperature.to(z.device, torch.float32).view(-1, 1, 1)
    lsm = torch.log_softmax(z, dim=-1)
    logp = lsm.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(lsm.exp() * lsm).sum(-1)
    return logp, entropy


def file_entries(folder: Path) -> list[dict]:
    out = []
    for f in sorted(folder.iterdir()):
        if not f.is_file():
            continue
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        out.append({"name": f.name, "size": f.stat().st_size, "sha256": h.hexdigest()})
    return out


def write_weights(model, full_state: dict, folder: Path, *, base_path: str, save_dtype: torch.dtype) -> str:
    """Writes the weights of ``full_state`` (a full, unsharded state dict) to ``folder``; returns the format.

    LoRA: adapter_config.json + adapter_model.safetensors, the layout vLLM's /v1/load_lora_adapter
    loads (no modules_to_save). Full: config.json, model.safetensors and the tokenizer of the base.
    """
    from safetensors.torch import save_file

    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if hasattr(model, "peft_config"):
        from peft import get_peft_model_state_dict

        adapter = get_peft_model_state_dict(model, state_dict=full_state)
        tensors = {k: v.detach().to("cpu", save_dtype).contiguous().clone() for k, v in adapter.items()}
        save_file(tensors, tmp / "adapter_model.safetensors", metadata={"format": "pt"})
        cfg = model.peft_config["default"].to_dict()
        cfg["base_model_name_or_path"] = base_path
        cfg["modules_to_save"] = None
        for k, v in list(cfg.items()):
            if isinstance(v, set):
                cfg[k] = sorted(v)
        (tmp / "adapter_config.json").write_text(json.dumps(cfg, indent=2, default=str))
        fmt = "lora"
    else:
        tensors = {k: v.detach().to("cpu", save_dtype).contiguous().clone() for k, v in full_state.items()}
        save_file(tensors, tmp / "model.safetensors", metadata={"format": "pt"})
        model.config.save_pretrained(tmp)
        cfg_file = tmp / "config.json"
        cfg_json = json.loads(cfg_file.read_text())
        cfg_json["dtype"] = str(save_dtype).removeprefix("torch.")
        cfg_json.pop("torch_dtype", None)
        cfg_file.write_text(json.dumps(cfg_json, indent=2))
        for name in (
            "generation_config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "chat_template.jinja",
            "special_tokens_map.json",
            "vocab.json",
            "merges.txt",
        ):
            src = Path(base_path) / name
            if src.is_file():
                shutil.copyfile(src, tmp / name)
        fmt = "full"
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return fmt
