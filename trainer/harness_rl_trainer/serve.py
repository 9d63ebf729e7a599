"""``python -m harness_rl_trainer.serve --model DIR [--enable-lora] [--port P]``: a CPU stand-in for vLLM.

The subset of vLLM's OpenAI-compatible server that harness-rl's proxy uses, on the same transformers
model the trainer trains: /v1/chat/completions and /v1/completions (streaming SSE too, per-token
logprobs, ``return_token_ids``, token-id prompts), /v1/models, /tokenize, /detokenize, /health,
/v1/load_lora_adapter, /v1/unload_lora_adapter, and the dev-mode routes (VLLM_SERVER_DEV_MODE=1):
/pause, /resume, /is_paused, /collective_rpc reload_weights (refused unless paused, as vLLM 0.34's is)
and /reset_prefix_cache. It takes vLLM's flags and refuses what vLLM refuses where harness-rl depends on
it: tools without --enable-auto-tool-choice. For tests and laptops only:
with a GPU, run vLLM itself.

Sampling is vLLM's: a field a request leaves out comes from the model folder's generation_config.json
(``--generation-config auto``, the default; ``vllm`` for neutral defaults), and logprobs are the raw
model's, before penalties, temperature and truncation (``--logprobs-mode raw_logprobs``, the default).
"""

from __future__ import annotations

import argparse
import json
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .model import VLLM_MAX_LORA_RANKS
from .sampling import add_sampling_flags, log_request, request_sampling
from .serve_engine import Engine
from .serve_responses import Completion, chat_ids, prompt_of
from .vllm_rules import (
    DEV_ROUTES,
    ApiError,
    VllmOptions,
    add_vllm_flags,
    check_tools,
    dev_route,
    generation_paused,
    vllm_options,
)


class Handler(BaseHTTPRequestHandler):
    """vLLM's routes over one Engine (make_handler binds it: http.server makes a handler per request)."""

    protocol_version = "HTTP/1.1"
    engine: Engine

    def log_message(self, fmt, *args):  # quiet
        pass

    def _json(self, status: int, obj) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, e: ApiError) -> None:
        self._json(
            e.status,
            {"object": "error", "message": str(e), "type": e.kind, "param": None, "code": e.status},
        )

    def do_GET(self):
        engine = self.engine
        path = self.path.split("?")[0]
        if path == "/health":
            return self._text(200, "")
        if path == "/is_paused" and engine.vllm.dev_mode:
            return self._json(200, {"is_paused": engine.paused})
        if path in ("/v1/models", "/models"):
            data = [
                {
                    "id": engine.name,
                    "object": "model",
                    "created": 0,
                    "owned_by": "vllm",
                    "root": engine.model_dir,
                    "parent": None,
                    "max_model_len": engine.max_model_len,
                }
            ]
            data += [
                {
                    "id": n,
                    "object": "model",
                    "created": 0,
                    "owned_by": "vllm",
                    "root": p,
                    "parent": engine.name,
                    "max_model_len": engine.max_model_len,
                }
                for n, p in engine.adapters.items()
            ]
            return self._json(200, {"object": "list", "data": data})
        self._error(ApiError(404, f"no route GET {path}", "NotFoundError"))

    def do_POST(self):
        engine = self.engine
        path, _, query = self.path.partition("?")
        try:
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                raise ApiError(400, "invalid JSON body") from None
            if path in DEV_ROUTES and engine.vllm.dev_mode:
                with engine.lock:
                    return dev_route(self, engine, path, query, body)
            with engine.lock:
                self.route(path, body)
        except ApiError as e:
            self._error(e)
        except Exception as e:  # noqa: BLE001
            self._error(ApiError(500, f"{type(e).__name__}: {e}", "InternalServerError"))

    def route(self, path: str, body: dict) -> None:
        engine = self.engine
        tok = engine.tokenizer
        if path == "/tokenize":
            if "messages" in body:
                ids = chat_ids(tok, body)
            else:
                ids = tok.encode(
                    body.get("prompt", ""), add_special_tokens=body.get("add_special_tokens", True)
                )
            return self._json(
                200,
                {
                    "count": len(ids),
                    "max_model_len": engine.max_model_len,
                    "tokens": ids,
                    "token_strs": None,
                },
            )
        if path == "/detokenize":
            return self._json(200, {"prompt": tok.decode(body.get("tokens", []))})
        if path == "/v1/load_lora_adapter":
            if not engine.enable_lora:
                raise ApiError(400, "LoRA is not enabled (start with --enable-lora)")
            name, lpath = body.get("lora_name"), body.get("lora_path")
            if not name or not lpath:
                raise ApiError(400, "Both 'lora_name' and 'lora_path' must be provided.")
            if name in engine.adapters and not body.get("load_inplace"):
                raise ApiError(
                    400,
                    f"The lora adapter '{name}' has already been loaded. If you want to load the "
                    "adapter in place, set 'load_inplace' to True.",
                    "InvalidUserInput",
                )
            if not (Path(lpath) / "adapter_config.json").is_file():
                raise ApiError(404, f"No adapter found for {lpath}", "NotFoundError")
            acfg = json.loads((Path(lpath) / "adapter_config.json").read_text())
            rank = max([acfg.get("r", 8), *(acfg.get("rank_pattern") or {}).values()])
            if rank > engine.max_lora_rank:  # vllm/lora/peft_helper.py:201, answered 500 by serving.py:209
                raise ApiError(
                    500,
                    f"LoRA rank {rank} is greater than max_lora_rank {engine.max_lora_rank}.",
                    "InternalServerError",
                )
            engine._add_adapter(name, lpath)
            return self._text(200, f"Success: LoRA adapter '{name}' added successfully.")
        if path == "/v1/unload_lora_adapter":
            name = body.get("lora_name")
            if name not in engine.adapters:
                raise ApiError(404, f"The lora adapter '{name}' cannot be found.", "NotFoundError")
            engine.peft.delete_adapter(name)
            del engine.adapters[name]
            if not engine.adapters:
                engine.base = engine.peft.unload()
                engine.peft = None
            return self._text(200, f"Success: LoRA adapter '{name}' removed successfully.")
        if path in ("/v1/chat/completions", "/v1/completions"):
            return self.completion(path == "/v1/chat/completions", body)
        raise ApiError(404, f"no route POST {path}", "NotFoundError")

    def completion(self, chat: bool, body: dict) -> None:
        engine = self.engine
        tok = engine.tokenizer
        generation_paused(engine)
        model = engine.model_for(body.get("model"))
        if chat:
            check_tools(engine, body)
            if not isinstance(body.get("messages"), list):
                raise ApiError(400, "messages: field required")
        prompt = prompt_of(tok, body, chat)
        n = int(body.get("n") or 1)
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        params = request_sampling(body, engine.sampling_defaults)
        stop_ids = set(body.get("stop_token_ids") or [])
        if not body.get("ignore_eos") and tok.eos_token_id is not None:
            stop_ids.add(tok.eos_token_id)
        gens = engine.generate(model, prompt, n, max_tokens, params, body.get("seed"), stop_ids)
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        if engine.log_requests:
            log_request(rid, params, n, body.get("seed"), max_tokens)
        answer = Completion(tok, body, chat, prompt, gens, rid)
        if not body.get("stream"):
            return self._json(200, answer.whole())

        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for obj in answer.chunks():
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def make_handler(engine: Engine) -> type[Handler]:
    """The handler class http.server instantiates per request, bound to ``engine``."""
    return type("Handler", (Handler,), {"engine": engine})


def make_server(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    served_name: str | None = None,
    enable_lora: bool = False,
    max_lora_rank: int = 16,
    generation_config: str = "auto",
    logprobs_mode: str = "raw_logprobs",
    log_requests: bool = False,
    vllm: VllmOptions | None = None,
) -> ThreadingHTTPServer:
    engine = Engine(
        model,
        served_name,
        enable_lora,
        max_lora_rank=max_lora_rank,
        generation_config=generation_config,
        logprobs_mode=logprobs_mode,
        log_requests=log_requests,
        vllm=vllm,
    )
    server = ThreadingHTTPServer((host, port), make_handler(engine))
    server.daemon_threads = True
    server.engine = engine
    return server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness_rl_trainer.serve", description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--served-model-name")
    p.add_argument("--enable-lora", action="store_true")
    p.add_argument(  # vllm/config/lora.py:26 (MaxLoRARanks), default 16
        "--max-lora-rank",
        type=int,
        default=16,
        choices=VLLM_MAX_LORA_RANKS,
        help="the largest adapter rank served",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    add_sampling_flags(p)
    add_vllm_flags(p)
    a = p.parse_args(argv)
    server = make_server(
        a.model,
        host=a.host,
        port=a.port,
        served_name=a.served_model_name,
        enable_lora=a.enable_lora,
        max_lora_rank=a.max_lora_rank,
        generation_config=a.generation_config,
        logprobs_mode=a.logprobs_mode,
        log_requests=a.enable_log_requests,
        vllm=vllm_options(a),
    )
    print(f"serving {server.engine.name} on http://{a.host}:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
