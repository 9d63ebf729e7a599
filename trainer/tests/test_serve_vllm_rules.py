"""The stand-in refuses what vLLM 0.34 refuses where harness-rl depends on it (issue 39), so a test fails
if the node agent stops doing what vLLM needs: pause before a full reload, the tool-call flags, the
dev-mode switch (the LoRA rank: test_serve.py)."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from harness_rl_trainer.serve import VllmOptions, main, make_server


def start(model, **vllm):
    s = make_server(str(model), served_name="tiny", enable_lora=True, vllm=VllmOptions(**vllm))
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s, f"http://127.0.0.1:{s.server_address[1]}"


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            data = r.read().decode()
            try:
                return r.status, json.loads(data)
            except ValueError:
                return r.status, data
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0}
TOOLS = [
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}
]


@pytest.fixture(scope="module")
def server(tiny_model):
    s, url = start(tiny_model)
    yield url
    s.shutdown()


def test_a_full_reload_while_generating_is_refused_until_paused_as_vllm_0_34_gpu_worker_645(
    server, tiny_model
):
    rpc = {"method": "reload_weights", "kwargs": {"weights_path": str(tiny_model)}}
    status, body = post(f"{server}/collective_rpc", rpc)
    assert status == 500 and "Pause generation" in body["message"]
    assert post(f"{server}/pause?mode=wait", {}) == (200, {"status": "paused"})
    # While paused, new requests get 503 (vllm/exceptions.py:139 RetryableRequestError).
    assert post(f"{server}/v1/chat/completions", CHAT)[0] == 503
    assert post(f"{server}/collective_rpc", rpc) == (200, {"results": [None]})
    assert post(f"{server}/resume", {}) == (200, {"status": "resumed"})
    assert post(f"{server}/v1/chat/completions", CHAT)[0] == 200
    assert post(f"{server}/reset_prefix_cache", {}) == (200, {"success": True})


def test_tools_without_auto_tool_choice_get_vllms_400(tiny_model):
    s, url = start(tiny_model, auto_tool_choice=False, tool_call_parser=None)
    try:
        status, body = post(f"{url}/v1/chat/completions", {**CHAT, "tools": TOOLS})
        assert status == 400
        assert "--enable-auto-tool-choice and --tool-call-parser" in body["message"]
        assert post(f"{url}/v1/chat/completions", {**CHAT, "tools": TOOLS, "tool_choice": "none"})[0] == 200
    finally:
        s.shutdown()


def test_tools_with_the_parser_flags_are_served(server):
    assert post(f"{server}/v1/chat/completions", {**CHAT, "tools": TOOLS})[0] == 200


def test_dev_mode_routes_exist_only_with_vllm_server_dev_mode(tiny_model):
    s, url = start(tiny_model, dev_mode=False)
    try:
        assert post(f"{url}/pause?mode=wait", {})[0] == 404
        assert post(f"{url}/collective_rpc", {"method": "reload_weights"})[0] == 404
    finally:
        s.shutdown()


def test_auto_tool_choice_without_a_parser_stops_the_server_as_vllm_cli_args_563(tiny_model):
    with pytest.raises(SystemExit, match="requires --tool-call-parser"):
        main(["--model", str(tiny_model), "--enable-auto-tool-choice", "--port", "0"])
