"""The trainer process over stdio, as the node agent's trainer role runs it: handshake, open, train, bad input."""

from __future__ import annotations

import pytest

from .helpers import StdioTrainer, make_samples, train_header

LORA = {"rank": 8, "alpha": 16}


@pytest.fixture
def proc(tmp_path):
    p = StdioTrainer(tmp_path / "ckpt")
    yield p
    p.close()


def test_protocol_round_trip_bad_input_and_restart(tmp_path, tiny_model, proc):
    assert proc.call({"t": "hello", "protocol_version": 99})["t"] == "refused"
    welcome = proc.call({"t": "hello", "protocol_version": 1})
    assert welcome["t"] == "welcome" and welcome["role"] == "trainer" and welcome["health"]["ready"]

    spec = {"name": "tiny", "path": str(tiny_model), "lora": LORA}
    bad = proc.call(
        {
            "t": "open",
            "id": "o1",
            "run": {"run_id": "run", "model": {**spec, "lora": {"rank": 600, "alpha": 8}}, "seed": 0},
        }
    )
    assert bad["t"] == "error" and bad["id"] == "o1" and bad["field"] == "run.model.lora.rank"
    missing = proc.call(
        {
            "t": "open",
            "id": "o2",
            "run": {"run_id": "run", "model": {"name": "x", "path": str(tmp_path / "no")}, "seed": 0},
        }
    )
    assert missing["t"] == "error" and missing["field"] == "run.model.path" and "no" in missing["message"]
    opened = proc.call({"t": "open", "id": "o3", "run": {"run_id": "run", "model": spec, "seed": 0}})
    assert opened == {"t": "opened", "id": "o3", "version": 0, "last": None, "weights": None}

    # malformed frame: the header is not JSON
    proc.send_raw(b"\x08\x00\x00\x00{not js}")
    err = proc.recv()[0]
    assert err["t"] == "error" and "not JSON" in err["message"]
    # a header that fails the schema names the field
    h, payload = train_header("run", 0, make_samples(512))
    err = proc.call({**h, "step": -1}, payload)
    assert err["t"] == "error" and err["field"] == "step"
    # token arrays that disagree with the lengths
    err = proc.call(h, payload[:-3])
    assert err["t"] == "error" and err["field"] == "samples.lengths"

    trained = proc.call(h, payload)
    assert trained["t"] == "trained" and trained["key"] == "run:0"
    r = trained["result"]
    assert r["model_version"] == 1 and r["weights"]["format"] == "lora" and r["tokens"] > 0
    assert {"grad_norm", "tokens_per_s", "peak_memory_mb", "logprob_abs_diff_mean"} <= r["metrics"].keys()
    again = proc.call({**h, "id": "again"}, payload)
    assert again["result"] == r  # applied once
    assert proc.call({"t": "hello", "protocol_version": 1})["health"]["versions"] == {"run": 1}
    assert proc.close() == 0

    # a restarted trainer resumes from its checkpoint folder
    p2 = StdioTrainer(tmp_path / "ckpt")
    try:
        p2.call({"t": "hello", "protocol_version": 1})
        opened = p2.call({"t": "open", "id": "o4", "run": {"run_id": "run", "model": spec, "seed": 0}})
        assert (
            opened["version"] == 1 and opened["last"]["key"] == "run:0" and opened["weights"] == r["weights"]
        )
        assert p2.call({**h, "id": "after-restart"}, payload)["result"] == r
        fetched = p2.call({"t": "weights_fetch", "id": "f", "run_id": "run", "version": 1})
        assert fetched["t"] == "file"
    finally:
        p2.proc.kill()
        p2.proc.wait()
