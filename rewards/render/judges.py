"""Judge options and the pairwise verdict for the `similarity` judge (the vlm one is in vlm.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.render.renderer import Render
from botgrpo_rewards.render.similarity import similarity

JUDGES = ("similarity", "vlm", "none")  # none: render only, score = rendered
MODES = ("single", "pairwise")
TIE_EPS = 1e-6


@dataclass
class RenderOptions:
    """Request options of the render service (see README.md)."""

    judge: str = "similarity"
    mode: str = "single"
    save_group: str = ""  # sub-folder of the service's save dir for this request's PNG ("a/b")

    @classmethod
    def parse(cls, options: dict) -> "RenderOptions":
        judge = options.get("judge", "similarity")
        mode = options.get("mode", "single")
        if judge not in JUDGES:
            raise BackendError(f"option judge={judge!r} is unknown; use one of {', '.join(JUDGES)}", "bad_request")
        if mode not in MODES:
            raise BackendError(f"option mode={mode!r} is unknown; use one of {', '.join(MODES)}", "bad_request")
        if mode == "pairwise" and judge == "none":
            raise BackendError("mode=pairwise needs a judge (similarity or vlm), not judge=none", "bad_request")
        group = options.get("save_group", "")
        if not isinstance(group, str) or len(group) > 200:
            raise BackendError("option save_group must be a short string naming a sub-folder of the service's "
                               "save dir, e.g. \"model-a/png\"", "bad_request")
        return cls(judge=judge, mode=mode, save_group=group)


def compare_similarity(candidate: Render, reference: Render) -> dict[str, float]:
    """Similarity parts and score of a rendered candidate against a rendered reference."""
    return similarity(candidate.png, candidate.text, candidate.boxes, reference.png, reference.text, reference.boxes)


def similarity_verdict(reference: Render, renders: dict[bytes, Render]) -> Callable[[bytes, bytes], str]:
    """A pairwise verdict that prefers the screenshot closer to the reference. `renders` maps each
    screenshot to its render, for the DOM parts of the score."""
    scores = {png: compare_similarity(r, reference)["score"] for png, r in renders.items()}

    def verdict(first: bytes, second: bytes) -> str:
        a, b = scores[first], scores[second]
        return "tie" if abs(a - b) <= TIE_EPS else ("first" if a > b else "second")
    return verdict
