"""samples.html: a few completions per logged step, each token coloured by its reward and advantage."""

from __future__ import annotations

import html
from pathlib import Path

_STYLE = """<style>body{font-family:sans-serif;margin:2em}pre{white-space:pre-wrap;font-size:13px;
line-height:1.7}span.t{border-radius:2px}h2{margin-top:2em}.meta{color:#555}</style>"""


_MARK = "<!-- steps -->"


def _colour(value: float, scale: float) -> str:
    """Green for positive, red for negative, opacity by magnitude relative to `scale`."""
    alpha = min(1.0, abs(value) / scale) * 0.6 if scale > 0 else 0.0
    rgb = "40,170,60" if value >= 0 else "220,50,50"
    return f"rgba({rgb},{alpha:.2f})"


def render_completion(text: str, offsets: list[tuple[int, int]], values: list[float]) -> str:
    """The text with one span per token, tinted by `values` (tokens without characters skipped)."""
    scale = max((abs(v) for v in values), default=0.0)
    parts = []
    for (start, end), v in zip(offsets, values):
        if end > start:
            parts.append(f'<span class="t" style="background:{_colour(v, scale)}" title="{v:+.3f}">'
                         f"{html.escape(text[start:end])}</span>")
    return "".join(parts)


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
            body.append("<b>token reward</b><pre>" + render_completion(r["text"], r["offsets"], r["rewards"]) + "</pre>")
            body.append("<b>advantage</b><pre>" + render_completion(r["text"], r["offsets"], r["advantages"]) + "</pre>")
        self.sections.append("\n".join(body))
        self.write()

    def write(self) -> None:
        self.path.write_text(f"<!doctype html><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                             f"{_STYLE}<h1>{html.escape(self.title)}</h1>{_MARK}" + "\n".join(self.sections))
