"""The checks every verdict passes where it enters a batch: a verdict made in Python (a reward
function's, an environment's) gets the protocol's span and metric rules, and any usable verdict
with a NaN or an infinity becomes a failed row. Torch-free, so `botgrpo reward score` stays light."""

from __future__ import annotations

import math
import numbers

from botgrpo_rewards.protocol import ProtocolError, ScoreResponse, error_response, validate_metrics, validate_spans


def checked(part: ScoreResponse | None, n_chars: int, who: str) -> ScoreResponse | None:
    """A verdict made in Python (a reward function's, an environment's) with the protocol's checks on
    what a score may carry: a finite number of any size; spans with integer offsets inside the text
    (`n_chars` code points) and rewards in [-1, 1]; finite metrics. Otherwise a failed row saying
    what `who` returned wrong. One validator for every path: services' lines get the same span and
    metric checks in the codec."""
    if part is None or not part.ok:
        return part
    bad = _not_finite(part)
    if bad:
        return error_response(part.id, "bad_result", f"{who} returned an invalid result: {bad}")
    try:
        part.score = float(part.score)
        part.spans = validate_spans(list(part.spans), n_chars)
        part.metrics = validate_metrics(part.metrics)
    except ProtocolError as err:
        return error_response(part.id, "bad_result", f"{who} returned an invalid result: {err}")
    return part


def _not_finite(response: ScoreResponse) -> str | None:
    """What in a usable response is not a finite number (score, a span's reward, a metric), or None."""
    values = [("score", response.score), *(("a span's reward", s.reward) for s in response.spans),
              *((f"metric {k}", v) for k, v in response.metrics.items())]
    for what, v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            return f"{what} must be a finite number, got {v!r}"
    return None


def finite(response: ScoreResponse) -> ScoreResponse:
    """The response, or a failed row when a usable one carries a NaN or an infinity: the one
    non-finite check where any reward enters a batch (environment, reward function, service, TRL
    adapter), so no NaN reaches advantages, loss or weights."""
    bad = _not_finite(response) if response.usable else None
    if bad is None:
        return response
    return error_response(response.id, "bad_result", f"the reward is not usable: {bad}; the row is masked",
                          info=response.info)
