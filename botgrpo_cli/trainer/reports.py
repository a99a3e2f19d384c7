"""What a run reports and logs: the metrics of one step, metrics.jsonl (one line per logged step)
with TensorBoard and wandb when available, the Rich progress line, and curves.png. The per-token
samples page is samples.py, the live bar and log lines progress.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from botgrpo_cli.algos import masked_mean, zero_variance_groups
from botgrpo_cli.algos.metrics import succeeded
from botgrpo_cli.console import console
from botgrpo_cli.reward_client.combined import failures_by_service
from botgrpo_cli.reward_client.scored import Scored
from botgrpo_cli.rundir import read_metrics


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


def _truncate_after(path: Path, step: int) -> None:
    """On resume, drop lines logged after the checkpoint so the file continues without duplicates."""
    if path.exists():
        kept = [r for r in read_metrics(path) if r["step"] <= step]
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


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def zero_variance_fraction(scores: Tensor, group_ids: Tensor, ok: Tensor) -> float:
    """Share of prompts whose scored completions all got the same score (no outcome signal)."""
    if not bool(ok.any()):
        return float("nan")
    gids = group_ids[ok]
    constant = zero_variance_groups(scores[ok], gids)  # (n_ok,) True for members of constant groups
    groups = gids.unique()
    return float(torch.isin(groups, gids[constant]).sum()) / len(groups)


def batch_success_rate(scored: Scored, success_metric: str) -> float:
    """The share of rows that succeed (algos.metrics.succeeded, as evaluation counts them); rows whose
    scoring failed count as failures."""
    return sum(r.usable and succeeded(r.metrics, success_metric) for r in scored.responses) / len(scored.responses)


def per_function(name: str, values: list[float]) -> dict[str, float]:
    """reward/NAME/mean and reward/NAME/std of one function's scores in a step (TRL's rewards/NAME/mean
    and /std: over the completions it scored, None left out; std with Bessel's correction)."""
    t = torch.tensor(values, dtype=torch.float64)
    return {f"reward/{name}/mean": float(t.mean()) if len(t) else float("nan"),
            f"reward/{name}/std": float(t.std()) if len(t) > 1 else 0.0}


def step_metrics(ro, scored: Scored, scores: Tensor, mask: Tensor, r: Tensor, adv: Tensor, upd: dict,
                 times: dict[str, float], success_metric: str, restarts: float,
                 counters: dict[str, int] | None = None) -> dict[str, float]:
    b = ro.batch
    ok_scores = scored.scores[scored.ok]
    tokens = int(b.mask.sum())
    m: dict[str, float] = {
        "reward/mean": float(ok_scores.mean()) if len(ok_scores) else float("nan"),
        "reward/std": float(ok_scores.std()) if len(ok_scores) > 1 else 0.0,
        "reward/masked": float(scored.masked),
        "reward/restarts": float(restarts),
        # the pool's running totals: requests sent again after a process or endpoint failed, and the failures
        "reward/resent": float((counters or {}).get("resent", 0)),
        "reward/endpoint_failures": float((counters or {}).get("endpoint_failures", 0)),
        "reward/stray_answers": float((counters or {}).get("stray_answers", 0)),  # answers for ids never sent
        "reward/token_mean": float(masked_mean(r, mask)),  # what the estimator sees: scores and spans, projected
        "adv/mean": float(masked_mean(adv, mask)),
        "adv/std": float(adv[mask].std()) if int(mask.sum()) > 1 else 0.0,
        "groups/zero_variance_frac": zero_variance_fraction(scores, b.group_ids, scored.ok),
        "groups/rounds": float(ro.rounds),
        "completion/length_mean": float(b.lengths.float().mean()),
        "completion/finished_frac": float(b.finished.float().mean()),
        "perf/tokens_per_s": tokens / max(times["generate"], 1e-9),
    }
    for name, values in sorted(scored.metrics.items()):
        if name.endswith("/score"):  # one reward function's (or service's) scores, over the rows it scored
            m.update(per_function(name.removesuffix("/score"), values))
        else:
            m[f"reward/{name}"] = _mean(values)
    for name, n in failures_by_service(scored.responses).items():  # several services: who failed which rows
        m[f"reward/{name}/failed"] = float(n)
    if success_metric in scored.metrics:
        m["success"] = batch_success_rate(scored, success_metric)
    m.update(upd)
    m.update({f"time/{k}_s": v for k, v in times.items()})
    return m


def sample_rows(ro, scored: Scored, r: Tensor, adv: Tensor, k: int) -> list[dict]:
    """The first k completions with per-token reward and advantage for the samples page, with the
    prompt as the task wrote it, as the chat template sent it, and the reference."""
    rows = []
    for i in range(min(k, len(ro.batch.texts))):
        n = len(ro.batch.offsets[i])
        resp = scored.responses[i]
        example = ro.examples[i]
        rows.append({"question": example.prompt, "prompt": ro.batch.prompts[i], "reference": example.reference,
                     "text": ro.batch.texts[i], "offsets": ro.batch.offsets[i],
                     "rewards": r[i, :n].tolist(), "advantages": adv[i, :n].tolist(),
                     "score": float(scored.scores[i]), "status": resp.status,
                     "by_function": by_function(resp), "metrics": dict(resp.metrics) if resp.usable else {},
                     "info": {k: v for k, v in resp.info.items() if k != "services"}})
        if ro.batch.loss_mask is not None:  # a multi-turn transcript: which tokens are the model's
            rows[-1]["trained"] = ro.batch.trained[i, :n].tolist()
            rows[-1]["turns"] = ro.batch.turns[i] if ro.batch.turns is not None else None
    return rows


def by_function(resp) -> dict[str, float | str]:
    """Each reward function's (or service's) part of a combined response: its score, "none" where it
    gave none (None), or its failure status; {} for a single service."""
    statuses = resp.info.get("services") or {}
    if len(statuses) < 2 and not any(k.endswith("/score") for k in resp.metrics):
        return {}
    return {name: resp.metrics.get(f"{name}/score", "none" if status == "ok" else status)
            for name, status in statuses.items()}


def plot_curves(records: list[dict], out: Path, title: str, held_out: list[tuple[int, float]] = ()) -> Path | None:
    """curves.png (evaluation/plots.py); `held_out`: (step, success) measured around the run."""
    from botgrpo_cli.evaluation.plots import plot_training

    return plot_training(records, out, title, held_out)
