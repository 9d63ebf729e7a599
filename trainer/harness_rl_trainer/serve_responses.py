"""The stand-in vLLM's OpenAI-shaped answers: a completion's prompt from the request, then its choices as
one JSON body or as SSE chunks (chat and text completions, per-token logprobs, ``return_token_ids``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from .vllm_rules import ApiError


def chat_ids(tok, body: dict) -> list[int]:
    """The chat request's prompt as token ids (the model's chat template, with its tools)."""
    # vLLM passes chat_template_kwargs to the template (entrypoints/serve/tokenize/protocol.py:144)
    out = tok.apply_chat_template(
        body["messages"],
        add_generation_prompt=body.get("add_generation_prompt", True),
        tokenize=True,
        tools=body.get("tools"),
        **(body.get("chat_template_kwargs") or {}),
    )
    return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)


def prompt_of(tok, body: dict, chat: bool) -> list[int]:
    """The prompt's token ids: chat messages, or a text completion's string, ids, or first of a batch."""
    if chat:
        return chat_ids(tok, body)
    p = body.get("prompt")
    if isinstance(p, str):
        return tok.encode(p)
    if isinstance(p, list) and p and all(isinstance(x, int) for x in p):
        return p
    if isinstance(p, list) and p and isinstance(p[0], list):
        return p[0]
    if isinstance(p, list) and p and isinstance(p[0], str):
        return tok.encode(p[0])
    raise ApiError(400, "prompt: must be a string or a list of token ids")


class Completion:
    """One request's generations (per choice: token ids, logprobs, finish_reason) as OpenAI answers."""

    def __init__(self, tok, body: dict, chat: bool, prompt: list[int], gens: list, rid: str):
        self.tok, self.body, self.chat, self.prompt, self.gens, self.rid = tok, body, chat, prompt, gens, rid
        self.want_ids = bool(body.get("return_token_ids"))
        logprobs = body.get("logprobs")
        self.want_lp = logprobs is True if chat else isinstance(logprobs, int)
        self.created = int(time.time())
        ct = sum(len(g[0]) for g in gens)
        self.usage = {"prompt_tokens": len(prompt), "completion_tokens": ct, "total_tokens": len(prompt) + ct}

    def _text_of(self, ids):
        return self.tok.decode([i for i in ids if i != self.tok.eos_token_id])

    def _chat_lp(self, ids, lps):
        tok = self.tok
        return {
            "content": [
                {
                    "token": tok.decode([t]),
                    "logprob": lp,
                    "bytes": list(tok.decode([t]).encode()),
                    "top_logprobs": [],
                }
                for t, lp in zip(ids, lps, strict=True)
            ]
        }

    def _cmpl_lp(self, ids, lps, start=0):
        return {
            "tokens": [self.tok.decode([t]) for t in ids],
            "token_logprobs": lps,
            "top_logprobs": [{} for _ in ids],
            "text_offset": list(range(start, start + len(ids))),
        }

    def whole(self) -> dict:
        """The non-streaming answer."""
        want_ids, want_lp, prompt = self.want_ids, self.want_lp, self.prompt
        if self.chat:
            choices = [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": self._text_of(ids)},
                    "logprobs": self._chat_lp(ids, lps) if want_lp else None,
                    "finish_reason": fin,
                    "stop_reason": None,
                    **({"token_ids": ids} if want_ids else {}),
                }
                for i, (ids, lps, fin) in enumerate(self.gens)
            ]
            return {
                "id": self.rid,
                "object": "chat.completion",
                "created": self.created,
                "model": self.body["model"],
                "choices": choices,
                "usage": self.usage,
                **({"prompt_token_ids": prompt} if want_ids else {}),
            }
        choices = [
            {
                "index": i,
                "text": self._text_of(ids),
                "logprobs": self._cmpl_lp(ids, lps) if want_lp else None,
                "finish_reason": fin,
                "stop_reason": None,
                **({"prompt_token_ids": prompt, "token_ids": ids} if want_ids else {}),
            }
            for i, (ids, lps, fin) in enumerate(self.gens)
        ]
        return {
            "id": self.rid,
            "object": "text_completion",
            "created": self.created,
            "model": self.body["model"],
            "choices": choices,
            "usage": self.usage,
        }

    def chunks(self) -> Iterator[dict]:
        """The streaming answer's SSE events, before ``data: [DONE]``: one per token (chat first sends
        each choice's role), then the usage when ``stream_options.include_usage`` asks for it."""
        head = {
            "id": self.rid,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "created": self.created,
            "model": self.body["model"],
        }
        if self.chat:
            for i in range(len(self.gens)):
                yield {
                    **head,
                    "choices": [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                    **({"prompt_token_ids": self.prompt} if self.want_ids and i == 0 else {}),
                }
        for i, (ids, lps, fin) in enumerate(self.gens):
            for k, (t, lp) in enumerate(zip(ids, lps, strict=True)):
                yield {
                    **head,
                    "choices": [self._token_choice(i, k, t, lp, fin if k == len(ids) - 1 else None)],
                }
        if (self.body.get("stream_options") or {}).get("include_usage"):
            yield {**head, "choices": [], "usage": self.usage}

    def _token_choice(self, i: int, k: int, t: int, lp: float, fin: str | None) -> dict:
        """Choice ``i``'s ``k``-th token as a stream chunk's choice (``fin`` on its last token)."""
        piece = "" if t == self.tok.eos_token_id else self.tok.decode([t])
        if self.chat:
            return {
                "index": i,
                "delta": {"content": piece},
                "logprobs": self._chat_lp([t], [lp]) if self.want_lp else None,
                "finish_reason": fin,
                **({"token_ids": [t]} if self.want_ids else {}),
            }
        return {
            "index": i,
            "text": piece,
            "logprobs": self._cmpl_lp([t], [lp], k) if self.want_lp else None,
            "finish_reason": fin,
            **(
                {"token_ids": [t], **({"prompt_token_ids": self.prompt} if k == 0 else {})}
                if self.want_ids
                else {}
            ),
        }
