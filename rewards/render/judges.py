"""Judge options and the pairwise verdict for the `similarity` judge (the vlm one is in vlm.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.contract import Outcome, check_order, number_option
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
    missing_score: float = -1.0  # score of a completion without a component attempt (empty, prose, a refusal)
    rendered_score: float = 0.1  # floor of a rendered candidate's score: rendered beats not rendered

    def score(self, value: float) -> float:
        """A rendered candidate's score from its judge value in [0, 1]."""
        return self.rendered_score + (1.0 - self.rendered_score) * value

    def outcomes(self) -> list[Outcome]:
        """The outcomes, best first (no spans: the score carries everything)."""
        return [Outcome("rendered", (self.rendered_score, 1.0)), Outcome("did not render", (0.0, 0.0)),
                Outcome("no component", (self.missing_score, self.missing_score))]

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
        opts = cls(judge=judge, mode=mode, save_group=group,
                   missing_score=number_option(options, "missing_score", cls.missing_score, -1.0, 0.0),
                   rendered_score=number_option(options, "rendered_score", cls.rendered_score, 0.0, 1.0))
        check_order("render", opts.outcomes())
        return opts


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
