"""The Rich progress line: step, reward, success, KL, clip fraction, step time, ETA."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from botgrpo_cli.console import console


def make_progress(disable: bool = False) -> Progress:
    return Progress(
        TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"), console=console, transient=False, disable=disable,
    )


def stats_line(m: dict[str, float]) -> str:
    parts = [f"reward {m.get('reward/mean', float('nan')):+.3f}"]
    if "success" in m:
        parts.append(f"success {m['success']:.2f}")
    if "kl" in m:
        parts.append(f"kl {m['kl']:.4f}")
    if m.get("update/steps", 1) > 1:  # off-policy steps: how much the clip acts
        parts.append(f"clip {m.get('clip_frac', float('nan')):.3f}")
    parts.append(f"{m.get('time/step_s', 0.0):.2f}s/step")
    return "  ".join(parts)
