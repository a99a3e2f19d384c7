"""Several training processes under accelerate (DDP by default; FSDP2 on request, sharded here with
torch's own `fully_shard`, on CPUs over gloo as on GPUs over NCCL).

Each process keeps a contiguous share of the step's prompts with their whole groups; the loss is
normalised by global counts so that the averaged gradient equals one process's over the global
batch; only rank 0 writes. With one process every helper here is the identity.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import re
import socket
import sys
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

import torch

from botgrpo_cli.algos.losses import BY_TOKENS
from botgrpo_cli.decoder_layers import base_of
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
        if self.world == 1 or self.accelerator is None:
            return contextlib.nullcontext()
        if is_fsdp(model):  # FSDP2: reduce-scatter only after the last micro-batch's backward
            model.set_requires_gradient_sync(last)
            return contextlib.nullcontext()
        return contextlib.nullcontext() if last else self.accelerator.no_sync(model)

    def clip_grad_norm(self, params: list, max_norm: float) -> float:
        """Clip by the global gradient norm (over shards under FSDP); the norm before clipping."""
        if any(is_sharded(p) for p in params):
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm)  # a DTensor: the shards' norms combined
            return float(norm.full_tensor())
        if self.accelerator is not None:
            return float(self.accelerator.clip_grad_norm_(params, max_norm))
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))

    def full_state_dict(self, model: Any) -> dict[str, torch.Tensor] | None:
        """The whole model's weights on rank 0 (a collective under FSDP: every rank calls it); None
        when the model is not sharded (its own state dict is whole)."""
        if not is_fsdp(model):
            return None
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def full_optimizer_state(self, model: Any, opt: torch.optim.Optimizer) -> dict | None:
        """The optimizer's whole state on rank 0, keyed by parameter name (a collective under FSDP);
        None when the model is not sharded (the optimizer's own state dict is whole)."""
        if not is_fsdp(model):
            return None
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(model, opt, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def optimizer_loader(self, model: Any, opt: torch.optim.Optimizer) -> Any:
        """How a saved full optimizer state reaches this process's shards (FSDP); None: the optimizer's own."""
        if not is_fsdp(model):
            return None
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        options = StateDictOptions(full_state_dict=True)  # every rank read the whole state from the file
        return lambda state: set_optimizer_state_dict(model, opt, state, options=options)


def make_accelerator(distributed: str) -> Any:
    """An Accelerator for this process: gloo on CPU, NCCL on GPUs. It wraps the model in DDP; under
    run.distributed=fsdp the model is sharded by `fully_shard_policy` instead (accelerate shards only
    on accelerators; torch's FSDP2 runs on CPUs too)."""
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    cpu = not torch.cuda.is_available()
    if distributed == "fsdp":
        return Accelerator(cpu=cpu)
    # gradient_as_bucket_view: DDP's buckets hold the gradients themselves, not a second copy
    return Accelerator(cpu=cpu, kwargs_handlers=[DistributedDataParallelKwargs(gradient_as_bucket_view=True)])


def fully_shard_policy(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """Shard the policy over the processes with FSDP2: each decoder layer (the classes the model
    names in `_no_split_modules`) is one unit, gathered for its own forward and backward, and the
    root unit holds the rest (embeddings, a tied head, the final norm). Build the optimizer after
    this: the parameters become DTensors."""
    from torch.distributed.fsdp import fully_shard

    model = model.to(device)
    inner = base_of(model)  # under a PEFT wrapper, the transformer that names its layers
    layer_names = set(getattr(inner, "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in layer_names]
    if not layers:
        raise UserError(f"run.distributed=fsdp shards by decoder layer, and {type(inner).__name__} names none "
                        "(_no_split_modules); use run.distributed=ddp")
    for layer in layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def is_fsdp(model: Any) -> bool:
    """Whether `model` is sharded with FSDP2 (`fully_shard`)."""
    return hasattr(model, "set_requires_gradient_sync") and hasattr(model, "unshard")


def is_sharded(param: torch.Tensor) -> bool:
    return hasattr(param, "full_tensor")


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
    by `tokens_per_step` (TRL's: the rollout batch's valid tokens over its optimizer steps) instead.
    bnpo (TRL's) averages the micro-batches' own token means, and DDP the processes'."""
    if loss_agg == "bnpo":
        return [1.0 / len(mb_masks)] * len(mb_masks)
    by_tokens = loss_agg in BY_TOKENS
    local = [float(m.sum()) if by_tokens else float(m.shape[0]) for m in mb_masks]
    total = tokens_per_step if loss_agg == "dapo" and tokens_per_step is not None else dist.sum([sum(local)])[0]
    return [n * dist.world / max(1.0, total) for n in local]


def reduce_metrics(metrics: dict[str, float], dist: Dist) -> dict[str, float]:
    """Step metrics over processes (combine_metrics's rule, on every process's metrics)."""
    if dist.world == 1:
        return metrics
    seen: list[Any] = [None] * dist.world
    torch.distributed.all_gather_object(seen, metrics)
    return combine_metrics(seen)


def reduction(name: str) -> str:
    """How a step metric combines over processes: "sum" for counts and rates, "max" for times (the
    slowest process's) and for an extreme named NAME_max (its per-mini-batch NAME_max/mbK too), "min"
    for NAME_min, "mean" for the rest."""
    if name in SUMMED or name.endswith("/failed"):
        return "sum"
    head, _, tail = name.rpartition("/")
    base = head if re.fullmatch(r"mb\d+", tail) else name
    if name.startswith("time/") or base.endswith("_max"):
        return "max"
    return "min" if base.endswith("_min") else "mean"


def combine_metrics(per_process: list[dict[str, float]]) -> dict[str, float]:
    """One step's metrics from each process's (see `reduction`). A metric some process lacks (no
    scored rows) counts as NaN there in a sum or mean (exact for means, since every process holds an
    equal share); a max or min is over the processes that have a number (NaN when none has)."""
    keys = sorted(set().union(*per_process))
    out = {}
    for k in keys:
        values = [float(m.get(k, math.nan)) for m in per_process]
        how = reduction(k)
        if how in ("max", "min"):
            known = [v for v in values if not math.isnan(v)]
            out[k] = (max if how == "max" else min)(known) if known else math.nan
        else:
            out[k] = sum(values) if how == "sum" else sum(values) / len(values)
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
    from botgrpo_base.child import LineChild, terminate_all

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
