"""torchrun / FSDP2 plumbing: the process group, the device mesh, sharding, and rank 0's broadcasts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Collectives inside a step (NCCL's own default is 10 minutes; a step's all-gathers never wait that long).
STEP_TIMEOUT_S = float(os.environ.get("HARNESS_RL_STEP_TIMEOUT_S", 600))
# Followers wait for rank 0's next request, which comes when the daemon sends a batch: hours apart while
# rollouts run. They wait on a gloo group with this timeout, not on NCCL, whose watchdog would abort
# the process after STEP_TIMEOUT_S (on CPU gloo's 30-minute default hid that).
IDLE_TIMEOUT = timedelta(days=365)


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")
    mesh: object | None = None
    control: object | None = None  # the gloo group requests are broadcast on

    @property
    def enabled(self) -> bool:
        return self.mesh is not None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def broadcast(self, obj):
        """Rank 0's ``obj`` on every rank (pickled), within a step."""
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def broadcast_request(self, obj):
        """Rank 0's next request on every rank, over the gloo control group: followers wait here for hours."""
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def all_sum(self, values: list[float]) -> list[float]:
        if not self.enabled:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.comm_device)
        dist.all_reduce(t)
        return t.tolist()

    def all_gather(self, obj) -> list:
        if not self.enabled:
            return [obj]
        out = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    @property
    def comm_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")


def init_distributed(device: str = "auto") -> DistContext:
    """Under torchrun (WORLD_SIZE set): the process group (nccl with GPUs, gloo without) and a 1-D mesh."""
    use_cuda = torch.cuda.is_available() if device == "auto" else device.startswith("cuda")
    if "WORLD_SIZE" not in os.environ:
        return DistContext(device=torch.device("cuda" if use_cuda else "cpu"))
    from torch.distributed.device_mesh import init_device_mesh

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    step_timeout = timedelta(seconds=STEP_TIMEOUT_S)
    if use_cuda:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev, timeout=step_timeout)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo", timeout=step_timeout)
    control = dist.new_group(backend="gloo", timeout=IDLE_TIMEOUT)
    mesh = init_device_mesh(dev.type, (world,), mesh_dim_names=("dp",))
    return DistContext(rank=rank, world_size=world, device=dev, mesh=mesh, control=control)


def shard(
    model: torch.nn.Module, ctx: DistContext, layers: list[torch.nn.Module], compute_dtype: torch.dtype
) -> None:
    """FSDP2: ``fully_shard`` each decoder layer, then the root; bf16 compute with fp32 reduce when asked."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    for layer in layers:
        fully_shard(layer, mesh=ctx.mesh, mp_policy=mp)
    fully_shard(model, mesh=ctx.mesh, mp_policy=mp)


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        # Every rank reaches this point before any tears the group down: destroying it while another
        # rank still has gloo work in flight aborts the process ("terminate called without an active
        # exception") and torchrun reports the run as failed.
        try:
            dist.barrier()
        except Exception:  # a rank that died already: tear down what is left
            pass
        dist.destroy_process_group()
