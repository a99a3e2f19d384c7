"""The math checker's comparison material, kept as test data (tests/data/math_*.py, tests/fixtures/peer),
as the figures of research/measurements.md and research/math-peer-corpora.md were measured on it.

    # the graded table, the peer-format table and the peer corpora as one corpus, then the benchmark on it
    .venv/bin/python research/scripts/math_corpus.py write /tmp/math_corpus.jsonl
    botgrpo bench rewards --service math --workers 1 --corpus /tmp/math_corpus.jsonl

    # each peer corpus against its own project's verdicts, math-verify with the options its test passed
    .venv/bin/python research/scripts/math_corpus.py peers

Groups in the written corpus: `table` (tests/data/math_cases.py, hostile rows left out: they would
only time math-verify's own timeouts; each answer boxed at the end of a short solution), each
format of the peer-format table (tests/data/math_peer_cases.py), each peer corpus (graded by our
verdict where our convention differs on purpose, `ours`; a test that asked for fewer rounding digits
sends `rel_tol`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data"))

import math_peer_corpora as peer_corpora  # noqa: E402  (test data, beside the tests)
from math_cases import CASES  # noqa: E402
from math_peer_cases import peer_rows  # noqa: E402

from botgrpo_rewards.math.bench import boxed  # noqa: E402


def corpus_rows() -> list[dict]:
    rows = []
    for category, gold, answer, ok in CASES:
        if category != "hostile":
            rows.append({"completion": boxed(gold, answer, ok).completion, "reference": {"answer": gold},
                         "correct": ok, "group": "table"})
    for fmt, gold, completion, ok in peer_rows():
        rows.append({"completion": completion, "reference": {"answer": gold}, "correct": ok, "group": fmt})
    for case in peer_corpora.load():
        options = {"rel_tol": case.rel_tol()} if case.rel_tol() else {}
        rows.append({"completion": case.prediction, "reference": {"answer": case.gold}, "correct": case.verdict,
                     "group": case.corpus, "options": options})
    return [{"id": f"c{i}", **row} for i, row in enumerate(rows)]


def _their_case_grade(case: peer_corpora.PeerCase) -> bool:
    """math-verify on one corpus case with the options that case's own test passed to it."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    kinds = case.options.get("match_types")
    targets = None if kinds is None else [LatexExtractionConfig(boxed_match_priority=0) if k == "latex"
                                           else ExprExtractionConfig() for k in kinds]
    parsed = [parse(t) if targets is None else parse(t, targets) for t in (case.gold, case.prediction)]
    try:
        return bool(verify(*parsed, float_rounding=case.options.get("precision", peer_corpora.MV_DEFAULT_PRECISION),
                           strict=case.options.get("strict", True),
                           allow_set_relation_comp=case.options.get("allow_set_relation_comp", False)))
    except Exception:  # math-verify raising counts as a wrong verdict
        return False


def peer_table() -> dict[str, tuple[int, int, int, int]]:
    """Per peer corpus: (cases, ours right (our verdict where a convention differs on purpose), ours
    agreeing with the corpus's own verdicts, math-verify agreeing with them)."""
    from botgrpo_rewards.math.service import MathBackend
    from botgrpo_rewards.protocol import ScoreRequest

    backend = MathBackend(workers=1)
    backend.start()
    counts: dict[str, list[int]] = {}
    try:
        for case in peer_corpora.load():
            opts = {"rel_tol": case.rel_tol()} if case.rel_tol() else {}
            req = ScoreRequest(id="c", completion=case.prediction, reference={"answer": case.gold}, options=opts)
            got = backend.score(req, time.monotonic() + 30).score == 1.0
            c = counts.setdefault(case.corpus, [0, 0, 0, 0])
            c[0] += 1
            c[1] += got == case.verdict
            c[2] += got == case.expected
            c[3] += _their_case_grade(case) == case.expected
    finally:
        backend.close()
    return {name: tuple(c) for name, c in counts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("write", help="write the corpus").add_argument("out", type=Path)
    sub.add_parser("peers", help="the peer corpora against their own verdicts")
    args = ap.parse_args()
    if args.command == "write":
        rows = corpus_rows()
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {len(rows)} rows to {args.out}")
        return
    print("corpus | cases | botgrpo math | botgrpo vs their verdicts | math-verify vs their verdicts")
    for name, (n, right, raw, theirs) in peer_table().items():
        print(f"{name} | {n} | " + " | ".join(f"{k}/{n} = {k / n:.1%}" for k in (right, raw, theirs)))


if __name__ == "__main__":
    main()
