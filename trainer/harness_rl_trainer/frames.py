"""Binary frames of the node protocol (daemon/protocol/frames.ts), for stdio.

One frame = u32le header length, the JSON header (UTF-8, space-padded so the payload starts 8-byte
aligned within the frame), then the payload. Over stdio each frame is preceded by its total length
as u32le. Samples travel as columns (see ``unpack_samples``).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

MAX_FRAME_BYTES = 1 << 30
BYTES_PER_TOKEN = 8 + 8 + 4 + 4 + 1


class FrameError(Exception):
    """A frame or its payload is malformed; ``field`` names the header field when one is to blame."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class StreamDesync(FrameError):
    """The byte stream cannot be split into frames any more (a length prefix is impossible)."""


def encode_frame(header: dict, payload: bytes = b"") -> bytes:
    raw = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    padded = -(-(4 + len(raw)) // 8) * 8 - 4
    return struct.pack("<I", padded) + raw + b" " * (padded - len(raw)) + bytes(payload)


def decode_frame(data: bytes) -> tuple[dict, memoryview]:
    """Splits one frame into its header (parsed JSON, not yet schema-checked) and payload."""
    if len(data) < 4:
        raise FrameError(f"frame of {len(data)} bytes is shorter than its length field")
    (n,) = struct.unpack_from("<I", data, 0)
    if 4 + n > len(data):
        raise FrameError(f"frame header length {n} exceeds the frame ({len(data)} bytes)")
    try:
        header = json.loads(bytes(data[4 : 4 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FrameError(f"frame header is not JSON: {err}") from None
    if not isinstance(header, dict):
        raise FrameError("frame header is not a JSON object")
    return header, memoryview(data)[4 + n :]


def read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    """n bytes, or None at a clean end of stream; raises on a stream cut inside a frame."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise StreamDesync(f"stream ended {n - got} bytes short of a frame")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def read_stdio_frame(stream: BinaryIO, max_bytes: int = MAX_FRAME_BYTES) -> bytes | None:
    """The next length-prefixed frame (without its prefix), or None at end of stream."""
    prefix = read_exactly(stream, 4)
    if prefix is None:
        return None
    (n,) = struct.unpack("<I", prefix)
    if n > max_bytes:
        raise StreamDesync(f"frame of {n} bytes exceeds the limit of {max_bytes}")
    data = read_exactly(stream, n)
    if data is None:
        raise StreamDesync(f"stream ended before a frame of {n} bytes")
    return data


def write_stdio_frame(stream: BinaryIO, header: dict, payload: bytes = b"") -> None:
    frame = encode_frame(header, payload)
    stream.write(struct.pack("<I", len(frame)) + frame)
    stream.flush()


@dataclass
class Samples:
    """One batch as columns over all tokens, plus per-sample metadata (``lengths`` splits the columns)."""

    rollout_ids: list[str]
    group_ids: list[str]
    indexes: list[int]
    lengths: list[int]
    old_logprobs: np.ndarray  # f64, NaN where unknown
    loss_weights: np.ndarray  # f64
    input_ids: np.ndarray  # i32
    advantages: np.ndarray  # f32
    loss_mask: np.ndarray  # u8
    temperatures: list[float] | None = None  # per sample; None: all 1

    def temperature(self, i: int) -> float:
        return 1.0 if self.temperatures is None else float(self.temperatures[i])

    def offsets(self) -> list[int]:
        out = [0]
        for n in self.lengths:
            out.append(out[-1] + n)
        return out

    def __len__(self) -> int:
        return len(self.lengths)


def unpack_samples(meta: dict, payload: bytes | memoryview) -> Samples:
    """The inverse of packSamples (frames.ts); raises FrameError naming the field that disagrees."""
    count = len(meta["lengths"])
    for name in ("rollout_ids", "group_ids", "indexes", "temperatures"):
        if name in meta and len(meta[name]) != count:
            raise FrameError(
                f"samples: {name} has {len(meta[name])} entries, lengths has {count}", field=f"samples.{name}"
            )
    n = int(sum(meta["lengths"]))
    if len(payload) != n * BYTES_PER_TOKEN:
        raise FrameError(
            f"samples: payload has {len(payload)} bytes, the lengths say {n} tokens ({n * BYTES_PER_TOKEN} bytes)",
            field="samples.lengths",
        )
    buf = bytes(payload)  # own, aligned copy
    return Samples(
        rollout_ids=list(meta["rollout_ids"]),
        group_ids=list(meta["group_ids"]),
        indexes=list(meta["indexes"]),
        lengths=[int(x) for x in meta["lengths"]],
        old_logprobs=np.frombuffer(buf, dtype="<f8", count=n, offset=0).copy(),
        loss_weights=np.frombuffer(buf, dtype="<f8", count=n, offset=8 * n).copy(),
        input_ids=np.frombuffer(buf, dtype="<i4", count=n, offset=16 * n).copy(),
        advantages=np.frombuffer(buf, dtype="<f4", count=n, offset=20 * n).copy(),
        loss_mask=np.frombuffer(buf, dtype="u1", count=n, offset=24 * n).copy(),
        temperatures=[float(t) for t in meta["temperatures"]] if "temperatures" in meta else None,
    )


def pack_samples(samples: list[dict]) -> tuple[dict, bytes]:
    """SampleJson-like dicts → (PackedSamples header part, payload); ``old_logprobs`` may hold None."""
    lengths = [len(s["input_ids"]) for s in samples]
    for i, s in enumerate(samples):
        for name in ("loss_mask", "advantages", "old_logprobs", "loss_weights"):
            if len(s[name]) != lengths[i]:
                raise FrameError(f"sample {i}: {name} has {len(s[name])} tokens, input_ids {lengths[i]}")

    def col(name: str, dtype: str) -> bytes:
        vals = [float("nan") if v is None else v for s in samples for v in s[name]]
        return np.asarray(vals, dtype=dtype).tobytes()

    payload = (
        col("old_logprobs", "<f8")
        + col("loss_weights", "<f8")
        + col("input_ids", "<i4")
        + col("advantages", "<f4")
        + col("loss_mask", "u1")
    )
    meta = {
        "rollout_ids": [s.get("rollout_id", f"r{i}") for i, s in enumerate(samples)],
        "group_ids": [s.get("group_id", "g") for s in samples],
        "indexes": [s.get("index", 0) for s in samples],
        "lengths": lengths,
    }
    if any("temperature" in s for s in samples):
        meta["temperatures"] = [s.get("temperature", 1.0) for s in samples]
    return meta, payload
