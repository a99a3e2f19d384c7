"""samples.html: a few completions per logged step, each token coloured by its reward and advantage.

Colour scale: green > 0, red < 0, per row on a symmetric-log opacity scale spanning two decades
below the row's largest |value|, with a visible floor for anything non-zero. A linear scale hid
the small uniform advantage BoT-GRPO gives every unpenalised token (+0.165 next to a -3 span drew
at 2% opacity), which is exactly the signal a reader needs to see.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

_STYLE = """<style>body{font-family:sans-serif;margin:2em}pre{white-space:pre-wrap;font-size:13px;
line-height:1.7}span.t{border-radius:2px}h2{margin-top:2em}.meta{color:#555}</style>"""


_MARK = "<!-- steps -->"
_LEGEND = ("<p class='meta'>Green: value &gt; 0, red: &lt; 0. Opacity per row on a symmetric-log scale (two "
           "decades below the row's largest |value|); every non-zero value is tinted, so the sign of a small "
           "advantage shows. Hover a token for its value.</p>")
FLOOR, TOP, DECADES = 0.12, 0.7, 2  # opacity of the smallest visible value and of the row's largest
ZERO = 1e-6  # |values| below this (relative to the row's largest) are drawn as zero


def alpha(value: float, scale: float) -> float:
    """Opacity of `value` in a row whose largest |value| is `scale`: log-spaced from FLOOR (at
    scale / 10**DECADES and below) to TOP (at scale); 0 for zero."""
    if scale <= 0 or abs(value) <= ZERO * scale:
        return 0.0
    unit = scale / 10**DECADES
    t = math.log1p(abs(value) / unit) / math.log1p(scale / unit)
    return FLOOR + (TOP - FLOOR) * t


def _colour(value: float, scale: float) -> str:
    rgb = "40,170,60" if value >= 0 else "220,50,50"
    return f"rgba({rgb},{alpha(value, scale):.2f})"


def render_completion(text: str, offsets: list[tuple[int, int]], values: list[float]) -> str:
    """The text with one span per token, tinted by `values` (tokens without characters skipped)."""
    scale = max((abs(v) for v in values), default=0.0)
    parts = []
    for (start, end), v in zip(offsets, values):
        if end > start:
            parts.append(f'<span class="t" style="background:{_colour(v, scale)}" title="{v:+.4f}">'
                         f"{html.escape(text[start:end])}</span>")
    return "".join(parts)


def _range(values: list[float]) -> str:
    return f"(min {min(values, default=0.0):+.3f}, max {max(values, default=0.0):+.3f})"


class SamplesPage:
    def __init__(self, path: Path, title: str):
        self.path, self.title = path, title
        self.sections: list[str] = [_MARK.join(path.read_text().split(_MARK)[1:])] if path.exists() else []
        self.write()  # a resumed run keeps the sections it had

    def add(self, step: int, rows: list[dict]) -> None:
        """rows: {prompt, text, offsets, rewards, advantages, score, status}."""
        body = [f"<h2>step {step}</h2>"]
        for r in rows:
            body.append(f'<p class="meta">score {r["score"]:+.3f} ({html.escape(r["status"])}) — prompt: '
                        f'{html.escape(r["prompt"][-200:])}</p>')
            body.append(f"<b>token reward</b> {_range(r['rewards'])}<pre>"
                        + render_completion(r["text"], r["offsets"], r["rewards"]) + "</pre>")
            body.append(f"<b>advantage</b> {_range(r['advantages'])}<pre>"
                        + render_completion(r["text"], r["offsets"], r["advantages"]) + "</pre>")
        self.sections.append("\n".join(body))
        self.write()

    def write(self) -> None:
        self.path.write_text(f"<!doctype html><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                             f"{_STYLE}<h1>{html.escape(self.title)}</h1>{_LEGEND}{_MARK}" + "\n".join(self.sections))
