"""``python -m harness_rl_trainer``: the trainer process of a node agent's trainer role, over stdio.

stdin carries node→trainer frames, stdout trainer→node frames (each preceded by its u32le length),
stderr is logs. Under torchrun, rank 0 alone talks stdio and broadcasts each request to the others.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import time
import traceback
from pathlib import Path

from .frames import (
    FrameError,
    StreamDesync,
    decode_frame,
    read_stdio_frame,
    unpack_samples,
    write_stdio_frame,
)
from .protocol import NODE_PROTOCOL_VERSION, ProtocolError, validate

log = logging.getLogger("harness_rl_trainer")
FILE_CHUNK = 4 << 20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m harness_rl_trainer", description=__doc__)
    p.add_argument(
        "--checkpoint-dir",
        default=os.environ.get("HARNESS_RL_TRAINER_DIR", "trainer-checkpoints"),
        help="where each run's weights and train state are kept (resumed from after a restart)",
    )
    p.add_argument("--node-id", default=socket.gethostname())
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    p.add_argument("--token-budget", type=int, default=8192, help="padded tokens per micro-batch")
    p.add_argument("--no-grad-ckpt", action="store_true", help="turn gradient checkpointing off")
    p.add_argument("--keep-versions", type=int, default=3, help="weight versions kept on disk per run")
    return p.parse_args(argv)


class Server:
    def __init__(self, args: argparse.Namespace, out, ctx):
        from .engine import Trainer, TrainerConfig

        self.args, self.out, self.ctx = args, out, ctx
        self.started = time.monotonic()
        self.last_error: str | None = None
        self.trainer = Trainer(
            TrainerConfig(
                checkpoint_dir=Path(args.checkpoint_dir),
                dtype=args.dtype,
                token_budget=args.token_budget,
                grad_ckpt=not args.no_grad_ckpt,
                keep_versions=args.keep_versions,
            ),
            ctx,
        )

    def send(self, header: dict, payload: bytes = b"") -> None:
        write_stdio_frame(self.out, header, payload)

    def health(self) -> dict:
        import torch

        gpus = []
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                free, total = torch.cuda.mem_get_info(i)
                gpus.append(
                    {
                        "index": i,
                        "name": torch.cuda.get_device_name(i),
                        "memory_used_mb": (total - free) / 2**20,
                        "memory_total_mb": total / 2**20,
                        "utilization": 0.0,
                    }
                )
        t = self.trainer
        return {
            "role": "trainer",
            "backend": "trainer-cmd",
            "ready": True,
            "queue_depth": 0,
            "in_flight": 0,
            "loading": False,
            "versions": {t.run["run_id"]: t.version} if t.run else {},
            "gpus": gpus,
            "uptime_s": time.monotonic() - self.started,
            "restarts": 0,
            "last_error": self.last_error,
        }

    def error(self, rid: str, message: str, field: str | None = None) -> None:
        self.last_error = message
        log.error("error (%s): %s", rid, message)
        h = {"t": "error", "id": rid, "message": message}
        if field:
            h["field"] = field
        self.send(h)

    def serve(self, stdin) -> None:
        while True:
            try:
                data = read_stdio_frame(stdin)
            except StreamDesync as err:
                self.error("-", f"stdin: {err}; cannot find the next frame, exiting")
                break
            if data is None:
                break
            rid = "-"
            try:
                header, payload = decode_frame(data)
                if isinstance(header.get("id"), str) and header["id"]:
                    rid = header["id"]
                validate(header)
                self.handle(header, payload)
            except (FrameError, ProtocolError) as err:
                self.error(rid, str(err), err.field)
            except Exception as err:  # the trainer stays up with its last good checkpoint
                field = getattr(err, "field", None)
                log.debug("%s", traceback.format_exc())
                self.error(rid, f"{type(err).__name__}: {err}", field)
        self.ctx.broadcast_request(None)

    def handle(self, h: dict, payload) -> None:
        t = h["t"]
        if t == "hello":
            if h["protocol_version"] != NODE_PROTOCOL_VERSION:
                self.send(
                    {
                        "t": "refused",
                        "message": f"protocol version {h['protocol_version']} is not this trainer's "
                        f"({NODE_PROTOCOL_VERSION})",
                    }
                )
                return
            self.send(
                {
                    "t": "welcome",
                    "protocol_version": NODE_PROTOCOL_VERSION,
                    "node_id": self.args.node_id,
                    "role": "trainer",
                    "health": self.health(),
                }
            )
        elif t == "health":
            self.send({"t": "health", "health": self.health()})
        elif t == "open":
            self.check_room(h["run"]["model"])
            opened = run_everywhere(self.ctx, self.trainer, ("open", h, b""))
            self.send({"t": "opened", "id": h["id"], **opened})
        elif t == "train":
            samples = unpack_samples(h["samples"], payload)  # a bad payload is refused before the broadcast
            if not (self.trainer.last and self.trainer.last["key"] == h["key"]):
                self.trainer.validate(h, samples)
            result = run_everywhere(self.ctx, self.trainer, ("train", h, bytes(payload)))
            self.send({"t": "trained", "id": h["id"], "key": h["key"], "result": result})
        elif t == "weights_fetch":
            self.send_weights(h)
        else:
            raise ProtocolError(f'a trainer does not take "{t}" messages', field="t")

    def check_room(self, model: dict) -> None:
        """A card whose free memory cannot hold the model is refused at open, naming who holds it."""
        from .gpu import check_gpu_room
        from .model import resolve_model_path

        check_gpu_room(
            resolve_model_path(model), bool(model.get("lora")), self.ctx.device, self.ctx.world_size
        )

    def send_weights(self, h: dict) -> None:
        t = self.trainer
        w = t.weights
        if t.run is None or h["run_id"] != t.run["run_id"]:
            raise ProtocolError(f"run {h['run_id']} is not open on this trainer", field="run_id")
        folder = t.run_dir(h["run_id"]) / "weights" / f"v{h['version']}"
        if w is None or w["version"] != h["version"]:
            if not folder.is_dir():
                raise ProtocolError(
                    f"no weights of version {h['version']} (kept: newest {self.args.keep_versions})",
                    field="version",
                )
            from .model import file_entries

            w = {
                "version": h["version"],
                "format": "lora" if (folder / "adapter_config.json").is_file() else "full",
                "path": str(folder.resolve()),
                "files": file_entries(folder),
            }
        for f in w["files"]:
            with open(Path(w["path"]) / f["name"], "rb") as fh:
                offset = 0
                while True:
                    chunk = fh.read(FILE_CHUNK)
                    last = len(chunk) < FILE_CHUNK
                    self.send(
                        {"t": "file", "id": h["id"], "name": f["name"], "offset": offset, "last": last}, chunk
                    )
                    offset += len(chunk)
                    if last:
                        break
        self.send({"t": "files_end", "id": h["id"], "weights": w})


def run_everywhere(ctx, trainer, request):
    """Rank 0 broadcasts the request; every rank runs it (FSDP2 needs all ranks in each step)."""
    ctx.broadcast_request(request)
    return execute(trainer, request)


def execute(trainer, request):
    kind, h, payload = request
    if kind == "open":
        return trainer.open(h["run"])
    return trainer.train(h, unpack_samples(h["samples"], payload))


def follower_loop(ctx, trainer) -> None:
    """Ranks > 0: run what rank 0 broadcasts until it sends None."""
    while True:
        request = ctx.broadcast_request(None)
        if request is None:
            return
        try:
            execute(trainer, request)
        except Exception as err:
            log.error("rank %d: %s", ctx.rank, err)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # stdout is the protocol: keep a private handle on it and send everything else printed to stderr.
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        level=os.environ.get("HARNESS_RL_TRAINER_LOG", "INFO"),
        stream=sys.stderr,
        format="%(asctime)s trainer %(levelname)s %(message)s",
    )
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from .dist import init_distributed, shutdown
    from .gpu import check_cuda

    check_cuda(args.device)
    ctx = init_distributed(args.device)
    server = Server(args, out, ctx)
    try:
        if ctx.is_main:
            log.info(
                "trainer up (world size %d, device %s, compute %s)",
                ctx.world_size,
                ctx.device,
                server.trainer.compute_dtype,
            )
            server.serve(sys.stdin.buffer)
        else:
            follower_loop(ctx, server.trainer)
    finally:
        shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
