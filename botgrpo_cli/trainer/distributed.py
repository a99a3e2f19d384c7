"""Several training processes under accelerate (DDP by default, FSDP on request).

Each process keeps a contiguous share of the step's prompts with their whole groups; the loss is
normalised by global counts so that the averaged gradient equals one process's over the global
batch; only rank 0 writes. With one process every helper here is the identity.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import sys
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

import torch

from botgrpo_cli.algos.losses import BY_TOKENS
from botgrpo_cli.errors import UserError

T = TypeVar("T")
SUMMED = ("reward/masked", "reward/restarts", "reward/resent", "reward/endpoint_failures", "reward/stray_answers",
          "perf/tokens_per_s")  # per-process counts and rates add up,
# as do the per-service failure counts reward/SERVICE/failed
STOP_GRACE_S = 120.0  # for the other ranks to finish a step's update and save, once one failed or we were stopped


@dataclass(frozen=True)
class Dist:
    """This process's place among the training processes."""

    rank: int = 0
    world: int = 1
    accelerator: Any = None  # accelerate.Accelerator; None outside a session

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier()

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum over processes (float64, one all-reduce)."""
        if self.world == 1:
            return [float(v) for v in values]
        t = torch.tensor(list(values), dtype=torch.float64)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def min(self, values: Sequence[float]) -> list[float]:
        """Element-wise minimum over processes."""
        if self.world == 1:
            return [float(v) for v in values]
        return _all_reduce(values, torch.distributed.ReduceOp.MIN)

    def from_main(self, obj: T) -> T:
        """Rank 0's value of `obj` on every process."""
        if self.world == 1:
            return obj
        box = [obj]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]

    def any(self, flag: bool) -> bool:
        return self.sum([float(flag)])[0] > 0

    def no_sync(self, model: Any, last: bool) -> Any:
        """Skip the gradient all-reduce on every micro-batch but the last (DDP / FSDP)."""
        if self.world == 1 or last or self.accelerator is None:
            return contextlib.nullcontext()
        return self.accelerator.no_sync(model)

    def clip_grad_norm(self, params: list, max_norm: float) -> float:
        """Clip by the global gradient norm (over shards under FSDP); the norm before clipping."""
        if self.accelerator is not None:
            return float(self.accelerator.clip_grad_norm_(params, max_norm))
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))


def make_accelerator(distributed: str) -> Any:
    """An Accelerator for this process: gloo on CPU, NCCL on GPUs; DDP, or FSDP2 when asked."""
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs, FullyShardedDataParallelPlugin

    cpu = not torch.cuda.is_available()
    if distributed == "fsdp":
        if cpu:
            raise UserError("run.distributed=fsdp needs GPUs; on CPU use the default run.distributed=ddp")
        plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="transformer_based_wrap")
        return Accelerator(fsdp_plugin=plugin)
    # gradient_as_bucket_view: DDP's buckets hold the gradients themselves, not a second copy
    return Accelerator(cpu=cpu, kwargs_handlers=[DistributedDataParallelKwargs(gradient_as_bucket_view=True)])


def shard(items: list[T], rank: int, world: int) -> list[T]:
    """Rank's contiguous share of `items` (len(items) must be a multiple of world)."""
    k = len(items) // world
    return items[rank * k:(rank + 1) * k]


def loss_weights(loss_agg: str, mb_masks: list[torch.Tensor], dist: Dist,
                 tokens_per_step: float | None = None) -> list[float]:
    """Factor for each micro-batch's own aggregated loss, so that the gradients, summed over
    micro-batches and averaged over processes (DDP), equal the full global batch's.

    token_mean normalises by valid tokens, the seq_mean_* aggregations by completions: the global
    count is all-reduced, and the factor carries world because DDP divides by it. dapo normalises
    by `tokens_per_step` (TRL's: the rollout batch's valid tokens over its optimizer steps) instead."""
    by_tokens = loss_agg in BY_TOKENS
    local = [float(m.sum()) if by_tokens else float(m.shape[0]) for m in mb_masks]
    total = tokens_per_step if loss_agg == "dapo" and tokens_per_step is not None else dist.sum([sum(local)])[0]
    return [n * dist.world / max(1.0, total) for n in local]


def reduce_metrics(metrics: dict[str, float], dist: Dist) -> dict[str, float]:
    """Step metrics over processes: counts and rates summed, times the slowest process's, the rest
    averaged (exact for means over equal shares)."""
    if dist.world == 1:
        return metrics
    seen: list[Any] = [None] * dist.world
    torch.distributed.all_gather_object(seen, sorted(metrics))
    keys = sorted(set().union(*seen))  # a metric some process lacks (no scored rows) counts as NaN there
    summed = dist.sum([metrics.get(k, float("nan")) for k in keys])
    times = [k for k in keys if k.startswith("time/")]
    slowest = _all_reduce([metrics.get(k, 0.0) for k in times], torch.distributed.ReduceOp.MAX)
    out = {k: (s if k in SUMMED or k.endswith("/failed") else s / dist.world) for k, s in zip(keys, summed)}
    out.update(zip(times, slowest))
    return out


def _all_reduce(values: Sequence[float], op: Any) -> list[float]:
    t = torch.tensor(list(values), dtype=torch.float64)
    torch.distributed.all_reduce(t, op=op)
    return t.tolist()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n: int, args: list[str], program: list[str] | None = None) -> int:
    """Run `botgrpo <args>` (or `program + args`) as ranks 0..n-1 of one job on this machine (the
    environment torch.distributed.run would set). When one fails, or this process is interrupted,
    the others get SIGTERM (they save their last step) and STOP_GRACE_S to exit before they are
    killed; ranks die with this process even when it is killed. Returns the first failing exit code."""
    from botgrpo_rewards.protocol import LineChild, terminate_all

    env = {"WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    argv = [*(program or [sys.executable, "-m", "botgrpo_cli"]), *args]
    exits: queue.Queue[int] = queue.Queue()  # ranks, as they exit
    ranks: list[LineChild] = []
    try:
        for r in range(n):  # own groups: a Ctrl-C reaches the ranks once, from here, not twice
            ranks.append(LineChild(argv, f"rank-{r}", env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                                   on_exit=lambda r=r: exits.put(r), stdout="inherit", own_group=True,
                                   stop_with_parent=True))
        for _ in range(n):
            code = ranks[_next_exit(exits)].returncode
            if code != 0:
                return code if code is not None else 1
        return 0
    finally:
        terminate_all(ranks, STOP_GRACE_S)


def _next_exit(exits: queue.Queue) -> int:
    while True:  # a timeout keeps the wait interruptible by Ctrl-C
        try:
            return exits.get(timeout=0.5)
        except queue.Empty:
            continue
