"""Render-based judging in `botgrpo eval` on real components, through the real render service."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from botgrpo_cli.evaluation.pairwise import judge_pairs
from botgrpo_cli.evaluation.results import Problem, Sample
from botgrpo_cli.evaluation.sampling import Pending, rerender_unjudged
from botgrpo_cli.reward_client import RewardPool
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_tasks import get_task

THROWS = "export default function Broken() { throw new Error('no props'); }"


@pytest.fixture(scope="module")
def render_pool():
    with RewardPool("render", workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def examples():
    return get_task("react_synth").eval_examples()[:2]


def _fenced(code: str) -> str:
    return f"```tsx\n{code}\n```"


def _sample(code: str, rendered: float | None = 1.0) -> Sample:
    metrics = {} if rendered is None else {"rendered": rendered}
    return Sample(text=_fenced(code), status="ok", score=1.0, success=True, metrics=metrics)


def test_similarity_judge_prefers_the_render_closer_to_the_reference(render_pool, examples):
    own, other = (ex.reference["reference_code"] for ex in examples)
    # problem 0: A writes problem 0's reference, B another component; then the other way round,
    # then the same code on both sides; then cases settled without the judge
    a = [Problem("p0", "", [_sample(own), _sample(other), _sample(own), _sample(own, 0.0), _sample(own, None)])]
    b = [Problem("p0", "", [_sample(other), _sample(own), _sample(own), _sample(other), _sample(other)])]
    outcomes, undecided = judge_pairs(a, b, examples[:1], "similarity", render_pool, deadline_ms=30_000)
    assert outcomes == [[1.0, 0.0, 0.5, 0.0]] and undecided == 1


def test_a_reference_that_does_not_render_leaves_the_sample_rendered_but_unjudged(render_pool, examples):
    code = examples[0].reference["reference_code"]
    request = ScoreRequest(id="x", completion=_fenced(code), reference={"reference_code": THROWS},
                           options={"judge": "similarity", "mode": "single"}, deadline_ms=30_000)
    row = Pending(0, request.completion, 10, True, task=Future(), render=render_pool.submit(request),
                  render_request=request)
    assert row.render.result().error.type == "bad_request"
    rerender_unjudged([row], render_pool)
    resp = row.render.result()
    assert resp.ok and resp.metrics["rendered"] == 1.0 and "similarity" not in resp.metrics
    assert row.render_note.startswith("similarity not measured: reference.reference_code does not render")
