"""A tiny Qwen3 and a byte-level BPE tokenizer trained offline, written to a model folder.

For tests, the GPU check and a laptop: nothing is downloaded. The tokenizer is trained on text in
the repository (README and docs), with a ChatML chat template like Qwen's.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- elif message['content'] is iterable %}"
    "{%- for part in message['content'] %}{%- if part['type'] == 'text' %}{{- part['text'] }}{%- endif %}{%- endfor %}"
    "{%- endif %}"
    "{%- if message['tool_calls'] is defined and message['tool_calls'] %}"
    "{%- for call in message['tool_calls'] %}"
    "{{- '<tool_call>' + call['function']['name'] + ' ' + (call['function']['arguments'] if call['function']['arguments'] is string else call['function']['arguments'] | tojson) + '</tool_call>' }}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def corpus_text(limit_chars: int = 400_000) -> list[str]:
    """Text from the repository to train the tokenizer on (README and docs), or a fixed fallback."""
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
    lines: list[str] = []
    total = 0
    for f in files:
        if not f.is_file():
            continue
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if total > limit_chars:
                break
            lines.append(line)
            total += len(line)
    if not lines:
        lines = ["The quick brown fox jumps over the lazy dog. Train LLM agents with RL. 0123456789"] * 50
    return lines


def build_tokenizer(vocab_size: int = 512):
    """A byte-level BPE tokenizer (every byte is a token, so any text encodes) as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_qwen3(
    out_dir: str | Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    head_dim: int = 16,
    intermediate: int = 128,
    vocab_size: int = 512,
    seed: int = 0,
    tokenizer=None,
    model_vocab: int | None = None,
    tie_embeddings: bool = False,
    dtype: str = "float32",
    device: str = "cpu",
) -> Path:
    """Writes a randomly initialised Qwen3 (safetensors in ``dtype``) and its tokenizer to ``out_dir``.

    ``model_vocab`` gives the model a larger vocabulary than the tokenizer's (a real model's shape);
    ``device`` is where the weights are initialised (a GPU builds a 1.7B model in seconds).
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer if tokenizer is not None else build_tokenizer(vocab_size)
    config = Qwen3Config(
        vocab_size=model_vocab or len(tok),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=2048,
        tie_word_embeddings=tie_embeddings,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM(config)
    model.to(getattr(torch, dtype)).save_pretrained(out)
    del model
    tok.save_pretrained(out)
    return out
