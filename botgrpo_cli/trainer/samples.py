"""samples.html: a few completions of chosen steps (the first, every log.samples_every, the last),
each with its prompt as the task wrote it (the chat-templated text on demand), the reference, and each
token coloured by its reward and its advantage.

Colour scale: green > 0, red < 0, per row on a symmetric-log opacity scale spanning two decades
below the row's largest |value|, with a visible floor for anything non-zero. A linear scale hid
the small uniform advantage BoT-GRPO gives every unpenalised token (+0.165 next to a -3 span drew
at 2% opacity), which is exactly the signal a reader needs to see.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

_STYLE = """<style>body{font-family:sans-serif;margin:2em;max-width:75em}pre{white-space:pre-wrap;font-size:13px;
line-height:1.7;background:#fafafa;padding:.4em}span.t{border-radius:2px}h2{margin-top:2em}.meta{color:#555}
details{margin:.3em 0}summary{cursor:pointer;color:#555}span.m{color:#666;background:#e8ecf4;font-style:italic}</style>"""


_MARK = "<!-- steps -->"
_LEGEND = ("<p class='meta'><b>Colours.</b> Green: value &gt; 0, red: &lt; 0. Each row is scaled to its own "
           "largest |value| (printed beside it as min / max): opacity grows on a symmetric-log scale over the two "
           "decades below it, and every non-zero value is tinted, so the sign of a small advantage shows. Hover a "
           "token for its value.</p><p class='meta'><b>Token reward</b> r = λ_seq · score + λ_tok · span reward "
           "(docs/algorithms.md §1): a service's score and each span's reward lie in [-1, 1], so with the default "
           "λ_seq = λ_tok = 1 a token's reward lies in [-2, 2] (e.g. -1.5: a failed completion, score -1, with a "
           "-0.5 span over the token); a reward function's score may have any size (the weighted sum of its "
           "functions' scores, shown beside it). <b>Advantage</b>: what the estimator made of those rewards, the signal the update "
           "follows.</p><p class='meta'><b>Multi-turn transcripts</b>: tool results and environment messages are "
           "shown <span class='m'>in grey italics</span>, uncoloured: they are not the model's tokens and are "
           "never trained.</p>")
FLOOR, TOP, DECADES = 0.12, 0.7, 2  # opacity of the smallest visible value and of the row's largest
ZERO = 1e-6  # |values| below this (relative to the row's largest) are drawn as zero


def shows_samples(step: int, every: int, last: int) -> bool:
    """The steps samples.html shows: the first, every `every`-th and the last (none when every is 0)."""
    return bool(every) and (step == 1 or step % every == 0 or step == last)


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


def render_completion(text: str, offsets: list[tuple[int, int]], values: list[float],
                      trained: list[bool] | None = None) -> str:
    """The text with one span per token, tinted by `values` (tokens without characters skipped).
    A multi-turn transcript's untrained tokens (tool results, environment messages: trained[t]
    False) are drawn in grey, untinted: the colours are on the model's own tokens only."""
    keep = trained if trained is not None else [True] * len(offsets)
    scale = max((abs(v) for v, k in zip(values, keep) if k), default=0.0)
    parts = []
    for (start, end), v, k in zip(offsets, values, keep):
        if end <= start:
            continue
        piece = html.escape(text[start:end])
        if k:
            parts.append(f'<span class="t" style="background:{_colour(v, scale)}" title="{v:+.4f}">{piece}</span>')
        else:
            parts.append(f'<span class="m" title="not the model\'s: not trained">{piece}</span>')
    return "".join(parts)


def _range(values: list[float]) -> str:
    return f"(min {min(values, default=0.0):+.3f}, max {max(values, default=0.0):+.3f})"


def _reference(reference: dict) -> str:
    """The reference the service compares with: each field in full, strings as written."""
    if not reference:
        return "<p class='meta'>reference: none (the service judges the completion alone)</p>"
    parts = [f"<b>{html.escape(str(k))}</b><pre>{html.escape(v if isinstance(v, str) else json.dumps(v))}</pre>"
             for k, v in reference.items()]
    return f"<details><summary>reference</summary>{''.join(parts)}</details>"


def _figure(value: object) -> str:
    return f"{value:+.3f}" if isinstance(value, (int, float)) else html.escape(str(value))


def _parts(r: dict) -> str:
    """' · by function: a +1.000, b none · metrics: m 2.000 · why: text': each function's score (none:
    it returned None), the row's metrics other than those scores, and its info."""
    parts = r.get("by_function") or {}
    out = ""
    if parts:
        out += " · by function: " + ", ".join(f"{html.escape(n)} {_figure(v)}" for n, v in parts.items())
    metrics = {k: v for k, v in (r.get("metrics") or {}).items() if not k.endswith("/score")}
    if metrics:
        out += " · metrics: " + ", ".join(f"{html.escape(k)} {_figure(v)}" for k, v in sorted(metrics.items()))
    info = r.get("info") or {}  # what the reward said in words (log_extra's columns among them)
    if info:
        out += " · " + ", ".join(f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in info.items())
    return out


def _row(r: dict) -> list[str]:
    """One completion: the prompt, what the model saw, the reference, rewards and advantages."""
    question = r.get("question", r["prompt"])
    return [f'<p class="meta">score {r["score"]:+.3f} ({html.escape(r["status"])}){_parts(r)}</p>',
            f"<b>prompt</b><pre>{html.escape(question)}</pre>",
            f"<details><summary>as the model saw it (chat template applied)</summary><pre>"
            f"{html.escape(r['prompt'])}</pre></details>",
            _reference(r.get("reference") or {}),
            f"<b>token reward</b> {_range(r['rewards'])}{_turns(r)}<pre>"
            + render_completion(r["text"], r["offsets"], r["rewards"], r.get("trained")) + "</pre>",
            f"<b>advantage</b> {_range(r['advantages'])}<pre>"
            + render_completion(r["text"], r["offsets"], r["advantages"], r.get("trained")) + "</pre>"]


def _turns(r: dict) -> str:
    turns = r.get("turns")
    return f" <span class='meta'>({len(turns)} model turns)</span>" if turns and len(turns) > 1 else ""


class SamplesPage:
    def __init__(self, path: Path, title: str):
        self.path, self.title = path, title
        self.sections: list[str] = [_MARK.join(path.read_text().split(_MARK)[1:])] if path.exists() else []
        self.write()  # a resumed run keeps the sections it had

    def add(self, step: int, rows: list[dict]) -> None:
        """rows: {question, prompt, reference, text, offsets, rewards, advantages, score, status,
        by_function, metrics, info} (the last three may be missing)."""
        body = [f"<h2>step {step}</h2>"]
        for r in rows:
            body.extend(_row(r))
        self.sections.append("\n".join(body))
        self.write()

    def write(self) -> None:
        self.path.write_text(f"<!doctype html><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                             f"{_STYLE}<h1>{html.escape(self.title)}</h1>{_LEGEND}{_MARK}" + "\n".join(self.sections))
