"""Frames and packed samples as daemon/protocol/frames.ts writes them; headers against the JSON Schema."""

from __future__ import annotations

import math
import struct

import pytest

from harness_rl_trainer.frames import FrameError, decode_frame, encode_frame, pack_samples, unpack_samples
from harness_rl_trainer.protocol import ProtocolError, message_types, validate

from .helpers import LOSS, make_samples, train_header


def test_frame_payload_is_8_byte_aligned_and_round_trips():
    for extra in range(9):
        h = {"t": "ok", "id": "x" * (1 + extra)}
        f = encode_frame(h, b"\x01\x02")
        (n,) = struct.unpack_from("<I", f)
        assert (4 + n) % 8 == 0
        back, payload = decode_frame(f)
        assert back == h and bytes(payload) == b"\x01\x02"


def test_samples_round_trip():
    s = make_samples(100, n=3)
    s[0]["old_logprobs"][7] = -0.5
    meta, payload = pack_samples(s)
    got = unpack_samples(meta, payload)
    assert got.lengths == [len(x["input_ids"]) for x in s]
    assert got.input_ids.tolist() == [t for x in s for t in x["input_ids"]]
    assert got.old_logprobs[7] == -0.5 and math.isnan(got.old_logprobs[0])


def test_length_mismatch_names_the_field():
    meta, payload = pack_samples(make_samples(100, n=2))
    with pytest.raises(FrameError, match="payload has") as e:
        unpack_samples({**meta, "lengths": [meta["lengths"][0], meta["lengths"][1] + 1]}, payload)
    assert e.value.field == "samples.lengths"
    with pytest.raises(FrameError) as e:
        unpack_samples({**meta, "group_ids": ["g"]}, payload)
    assert e.value.field == "samples.group_ids"


def test_schema_covers_the_trainer_messages_and_names_bad_fields():
    assert {"hello", "welcome", "open", "opened", "train", "trained", "error"} <= set(message_types())
    h, _ = train_header("run", 0, make_samples(100))
    validate(h)
    with pytest.raises(ProtocolError) as e:
        validate({**h, "loss": {**LOSS, "learning_rate": -1}})
    assert e.value.field == "loss.learning_rate"
    with pytest.raises(ProtocolError) as e:
        validate({"t": "nope"})
    assert e.value.field == "t"


def test_sample_temperatures_travel_with_the_batch_and_pass_the_schema():
    samples = make_samples(512, n=2)
    samples[0]["temperature"] = 0.6
    h, payload = train_header("run", 0, samples)
    validate(h)
    assert h["samples"]["temperatures"] == [0.6, 1.0]
    back = unpack_samples(h["samples"], payload)
    assert [back.temperature(i) for i in range(2)] == [0.6, 1.0]
    assert unpack_samples(*pack_samples(make_samples(512, n=2))).temperatures is None
    with pytest.raises(ProtocolError) as e:
        validate({**h, "samples": {**h["samples"], "temperatures": [0.0, 1.0]}})
    assert e.value.field == "samples.temperatures.0"
    with pytest.raises(FrameError) as e:
        unpack_samples({**h["samples"], "temperatures": [1.0]}, payload)
    assert e.value.field == "samples.temperatures"
