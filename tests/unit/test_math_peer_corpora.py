"""The peer corpora (tests/fixtures/peer): well-formed, attributed, and graded as the math service grades them."""

from __future__ import annotations

import time

import pytest

import math_peer_corpora as peer_corpora
from botgrpo_rewards.protocol import ScoreRequest

CASES = peer_corpora.load()


def test_every_case_names_its_source_and_license():
    assert {c.corpus for c in CASES} >= {"math_verify_core", "hendrycks_math"}
    assert sum(c.corpus == "math_verify_core" for c in CASES) == 196
    rows = [line for path in peer_corpora.FIXTURES.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert all('"license": "MIT' in row and '"source": "' in row for row in rows)
    assert all(c.why for c in CASES if c.ours is not None)  # a convention kept on purpose says which


@pytest.fixture(scope="module")
def backend(math_backend):
    return math_backend


def test_math_verify_core_is_read_as_graded(backend):
    """The core suite at >= 97% (our verdict where a convention differs on purpose): a regression test
    on material nobody here wrote, at the issue's target."""
    core = [c for c in CASES if c.corpus == "math_verify_core"]
    wrong = []
    for c in core:
        req = ScoreRequest(id="p", completion=c.prediction, reference={"answer": c.gold},
                           options={"rel_tol": c.rel_tol()} if c.rel_tol() else {})
        if (backend.score(req, time.monotonic() + 60).score == 1.0) is not c.verdict:
            wrong.append((c.source, c.gold[:40], c.prediction[-40:]))
    assert len(wrong) <= len(core) * 0.03, wrong
