"""Graded cases from other projects' own test suites (tests/fixtures/peer/*.jsonl): test data, read by
test_math_peer_corpora and research/scripts/math_corpus.py.

Each row: corpus, source (project, version, file::test), license, gold, prediction, expected (that
project's verdict), options (the grader options its test passed), and, where our convention differs
on purpose (rewards/math/README.md, "Where math-verify decides differently"), `ours` (our verdict)
and `why`. Accuracy counts `ours` where it is given: a deliberate convention is not a misread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "peer"
# math-verify's float_rounding default: a test that passes fewer digits asks for a tolerance
MV_DEFAULT_PRECISION = 6


@dataclass(frozen=True)
class PeerCase:
    corpus: str
    source: str
    gold: str
    prediction: str
    expected: bool  # the verdict of the project the case comes from
    options: dict = field(default_factory=dict)
    ours: bool | None = None  # our verdict where our convention differs on purpose
    why: str = ""

    @property
    def verdict(self) -> bool:
        """The verdict we are graded against."""
        return self.expected if self.ours is None else self.ours

    def rel_tol(self) -> float:
        """Our tolerance for a case whose test asked for fewer rounding digits than the default."""
        digits = self.options.get("precision", MV_DEFAULT_PRECISION)
        return 0.0 if digits >= MV_DEFAULT_PRECISION else 10.0 ** -digits


def load(directory: Path = FIXTURES) -> list[PeerCase]:
    cases = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                cases.append(PeerCase(row["corpus"], row["source"], row["gold"], row["prediction"], row["expected"],
                                      row.get("options", {}), row.get("ours"), row.get("why", "")))
    return cases
