"""The vLLM 0.34 rules the CPU stand-in (serve.py) keeps where harness-rl depends on them: its flags, the
dev-mode routes (/pause, /resume, /is_paused, /collective_rpc, /reset_prefix_cache) and what it refuses
(tools without the tool-call flags, a full reload while generating, generation while paused)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Protocol


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError"):
        super().__init__(message)
        self.status, self.kind = status, kind


class VllmOptions:
    """The vLLM flags and switches the stand-in honours as vLLM 0.34 does."""

    def __init__(
        self,
        *,
        auto_tool_choice: bool = True,
        tool_call_parser: str | None = "hermes",
        dev_mode: bool = True,
    ):
        self.auto_tool_choice = auto_tool_choice
        self.tool_call_parser = tool_call_parser
        self.dev_mode = dev_mode


class Engine(Protocol):
    """What these rules read and change of serve_engine.py's Engine (declared here: it imports rules)."""

    vllm: VllmOptions
    paused: bool
    model_dir: str

    def _load(self, model_dir: str) -> None: ...


DEV_ROUTES = ("/pause", "/resume", "/is_paused", "/collective_rpc", "/reset_prefix_cache")


def check_tools(engine: Engine, body: dict) -> None:
    """Tools with tool_choice auto (the default when tools are sent, vllm/entrypoints/openai/
    chat_completion/protocol.py:992) need both flags (vllm/renderers/online_renderer.py:276); the parser
    exists only with both (vllm/parser/parser_manager.py:34)."""
    tools = body.get("tools")
    choice = body.get("tool_choice", "auto" if tools else None)
    if (
        not tools
        or choice in (None, "none")
        or (engine.vllm.auto_tool_choice and engine.vllm.tool_call_parser)
    ):
        return
    if choice == "auto" and not engine.vllm.auto_tool_choice:
        raise ApiError(
            400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
        )
    raise ApiError(400, f"tool_choice={json.dumps(choice)} requires --tool-call-parser to be set")


def generation_paused(engine: Engine) -> None:
    """Between /pause (modes abort and wait) and /resume new requests get 503 (vllm/exceptions.py:139)."""
    if engine.paused:
        raise ApiError(503, "Generation is paused; please retry", "ServiceUnavailableError")


def dev_route(handler, engine: Engine, path: str, query: str, body: dict) -> None:
    """The dev-mode routes (vllm/entrypoints/launchers/api_server/routers.py:46: only with
    VLLM_SERVER_DEV_MODE=1). Requests run one at a time under the engine lock, so a pause in any mode
    finds nothing in flight."""
    if path == "/pause":
        mode = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("mode", "abort")
        if mode not in ("abort", "wait", "keep"):
            raise ApiError(400, f"Invalid pause mode: {mode}")
        engine.paused = True
        return handler._json(200, {"status": "paused"})
    if path == "/resume":
        engine.paused = False
        return handler._json(200, {"status": "resumed"})
    if path == "/is_paused":
        return handler._json(200, {"is_paused": engine.paused})
    if path == "/reset_prefix_cache":
        return handler._json(200, {"success": True})
    method = body.get("method")
    if method is None:
        raise ApiError(400, "Missing 'method' in request body")
    if method == "update_config":
        cfg = (body.get("args") or [{}])[0].get("model_config", {})
        if "model" in cfg:
            engine.model_dir = cfg["model"]
        return handler._json(200, {"results": [None]})
    if method == "reload_weights":
        # vllm/v1/worker/gpu_worker.py:645 reload_weights(weights_iterator, weights_path, ...); with the
        # KV cache in use it fails (vllm/v1/worker/extensible_kv_cache.py:786): pause first.
        if not engine.paused:
            raise ApiError(
                500,
                "RuntimeError: Updating weights layer by layer needs free device memory beside the "
                "extensible KV cache. Pause generation with the cache cleared first.",
                "InternalServerError",
            )
        path_kw = (body.get("kwargs") or {}).get("weights_path")
        if path_kw:
            engine.model_dir = path_kw
        engine._load(engine.model_dir)
        return handler._json(200, {"results": [None]})
    raise ApiError(400, f"unknown collective_rpc method {method!r}")


def add_vllm_flags(p: argparse.ArgumentParser) -> None:
    """vLLM's flags that harness-rl's node agent passes; the stand-in takes them all."""
    p.add_argument("--enable-auto-tool-choice", action="store_true")
    p.add_argument("--tool-call-parser")
    p.add_argument("--reasoning-parser")
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--tensor-parallel-size", type=int, default=1)


def vllm_options(a: argparse.Namespace) -> VllmOptions:
    """As vLLM reads them: --enable-auto-tool-choice needs a parser (vllm/entrypoints/common/cli_args.py
    :563), dev-mode routes only with VLLM_SERVER_DEV_MODE=1."""
    if a.enable_auto_tool_choice and not a.tool_call_parser:
        raise SystemExit("Error: --enable-auto-tool-choice requires --tool-call-parser")
    return VllmOptions(
        auto_tool_choice=a.enable_auto_tool_choice,
        tool_call_parser=a.tool_call_parser,
        dev_mode=os.environ.get("VLLM_SERVER_DEV_MODE") == "1",
    )
