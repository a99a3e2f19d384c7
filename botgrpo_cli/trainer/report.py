"""What one step reports: the metrics line and the rows shown on samples.html."""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo_cli.algos import masked_mean, zero_variance_groups
from botgrpo_cli.reward_client.combined import failures_by_service
from botgrpo_cli.trainer.scoring import Scored


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


def step_metrics(s, ro, scored: Scored, scores: Tensor, mask: Tensor, adv: Tensor, upd: dict,
                 times: dict[str, float]) -> dict[str, float]:
    b = ro.batch
    ok_scores = scored.scores[scored.ok]
    tokens = int(b.mask.sum())
    m: dict[str, float] = {
        "reward/mean": float(ok_scores.mean()) if len(ok_scores) else float("nan"),
        "reward/std": float(ok_scores.std()) if len(ok_scores) > 1 else 0.0,
        "reward/masked": float(scored.masked),
        "reward/restarts": float(s.pool.stats.get("restarts", 0)),
        "adv/mean": float(masked_mean(adv, mask)),
        "adv/std": float(adv[mask].std()) if int(mask.sum()) > 1 else 0.0,
        "groups/zero_variance_frac": zero_variance_fraction(scores, b.group_ids, scored.ok),
        "groups/rounds": float(ro.rounds),
        "completion/length_mean": float(b.lengths.float().mean()),
        "completion/finished_frac": float(b.finished.float().mean()),
        "perf/tokens_per_s": tokens / max(times["generate"], 1e-9),
    }
    for name, values in sorted(scored.metrics.items()):
        m[f"reward/{name}"] = _mean(values)
    for name, n in failures_by_service(scored.responses).items():  # several services: who failed which rows
        m[f"reward/{name}/failed"] = float(n)
    metric = s.task.success_metric
    if metric in scored.metrics:
        m["success"] = sum(scored.metrics[metric]) / len(scored.ok)  # failed scorings count as failures
    m.update(upd)
    m.update({f"time/{k}_s": v for k, v in times.items()})
    return m


def sample_rows(ro, scored: Scored, r: Tensor, adv: Tensor, k: int) -> list[dict]:
    """The first k completions with per-token reward and advantage for the samples page."""
    rows = []
    for i in range(min(k, len(ro.batch.texts))):
        n = len(ro.batch.offsets[i])
        resp = scored.responses[i]
        rows.append({"prompt": ro.batch.prompts[i], "text": ro.batch.texts[i], "offsets": ro.batch.offsets[i],
                     "rewards": r[i, :n].tolist(), "advantages": adv[i, :n].tolist(),
                     "score": float(scored.scores[i]), "status": resp.status})
    return rows
