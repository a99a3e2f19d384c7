"""Atomic checkpoints (temp dir + rename), keep the last K, exact resume.

Contents: model (HF format) + tokenizer, optimizer, scheduler, RNG states (python, numpy, torch),
data position, step, the resolved config.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from botgrpo_cli import rundir

PREFIX = rundir.STEP_PREFIX


@dataclass
class TrainState:
    step: int  # steps completed
    data_position: int  # prompts drawn from the training stream


def save(run_dir: Path, state: TrainState, model: Any, tokenizer: Any, opt: Any, sched: Any,
         cfg_yaml: str, keep_last: int, weights: dict | None = None) -> Path:
    """Write checkpoints/step-N atomically and drop all but the newest `keep_last`.
    weights: the full state dict when the model's own is sharded (FSDP); opt None: no optimizer state."""
    root = run_dir / "checkpoints"
    root.mkdir(exist_ok=True)
    final = root / f"{PREFIX}{state.step:06d}"
    tmp = root / f".tmp-{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.save_pretrained(tmp / "model", state_dict=weights)
    tokenizer.save_pretrained(tmp / "model")
    if opt is not None:
        torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp / "optim.pt")
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                "torch": torch.get_rng_state()}, tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps(state.__dict__))
    (tmp / "config.yaml").write_text(cfg_yaml)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    for old in checkpoints(run_dir)[:-keep_last]:
        shutil.rmtree(old)
    return final


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temp dirs of an interrupted save are ignored)."""
    return rundir.checkpoint_dirs(run_dir)


def latest(run_dir: Path) -> Path | None:
    found = checkpoints(run_dir)
    return found[-1] if found else None


def restore(ckpt: Path, opt: Any, sched: Any) -> TrainState:
    """Load optimizer, scheduler and RNG states (the model is loaded from ckpt/model by the caller)."""
    optim = torch.load(ckpt / "optim.pt", weights_only=False)
    opt.load_state_dict(optim["optimizer"])
    sched.load_state_dict(optim["scheduler"])
    rng = torch.load(ckpt / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    return TrainState(**json.loads((ckpt / "state.json").read_text()))
