"""Reward service `keyword`: score 1 when the completion uses `reference.word`, else 0 (-1 when
empty), plus +0.5 on the characters of each use. A Backend scores one request; the service runner
(protocol I/O, deadlines, HTTP) is botgrpo's."""

from __future__ import annotations

import re

from botgrpo_rewards.backend import Backend, BackendError, ScoreResult, check_option_names
from botgrpo_rewards.protocol import CAPABILITY_DETERMINISTIC, ScoreRequest, Span


class KeywordBackend(Backend):
    name = "keyword"
    version = "0.1.0"
    capabilities = ("spans", CAPABILITY_DETERMINISTIC)  # the answer depends on the request alone
    max_inflight = 16

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        check_option_names(self.name, request.options, ())
        word = request.reference.get("word")
        if not isinstance(word, str) or not word:
            raise BackendError("reference.word is missing: send {\"word\": \"apple\"}", "bad_request")
        if not request.completion.strip():
            return ScoreResult(score=-1.0, metrics={"found": 0.0})
        uses = list(re.finditer(rf"\b{re.escape(word)}\b", request.completion, re.IGNORECASE))
        spans = [Span(m.start(), m.end(), 0.5, "word") for m in uses]  # code points, sorted, disjoint
        return ScoreResult(score=1.0 if uses else 0.0, spans=spans, metrics={"found": float(bool(uses))})
