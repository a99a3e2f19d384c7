"""Step metrics: metrics.jsonl (one line per logged step), TensorBoard and wandb when available."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from botgrpo_cli.console import console

TIMING_KEYS = ("time/step_s", "time/generate_s", "time/reward_s", "time/update_s", "time/logp_s",
               "perf/tokens_per_s", "time/eval_s")  # wall-clock fields (differ between identical runs)


class MetricsLog:
    def __init__(self, run_dir: Path, tensorboard: bool, wandb: bool, config: dict, resume_step: int = 0):
        self.path = run_dir / "metrics.jsonl"
        _truncate_after(self.path, resume_step)
        self.file = self.path.open("a")
        self.tb = _tensorboard(run_dir) if tensorboard else None
        self.wandb = _wandb(config) if wandb else None

    def write(self, step: int, metrics: dict[str, float]) -> None:
        line = {"step": step, **{k: _finite_or_none(v) for k, v in metrics.items()}}
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()
        for k, v in metrics.items():
            if self.tb is not None:
                self.tb.add_scalar(k, v, step)
        if self.wandb is not None:
            self.wandb.log(metrics, step=step)

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _truncate_after(path: Path, step: int) -> None:
    """On resume, drop lines logged after the checkpoint so the file continues without duplicates."""
    if path.exists():
        kept = [r for r in read(path) if r["step"] <= step]
        path.write_text("".join(json.dumps(r) + "\n" for r in kept))


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _tensorboard(run_dir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None  # tensorboard is optional; metrics.jsonl has everything
    return SummaryWriter(str(run_dir / "tb"))


def _wandb(config: dict) -> Any:
    try:
        import wandb
    except ImportError:
        console.print("[yellow]log.wandb is on but wandb is not installed (pip install wandb); skipping it[/]")
        return None
    wandb.init(project="botgrpo", config=config)
    return wandb
