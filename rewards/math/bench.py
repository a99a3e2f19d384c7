"""`botgrpo bench rewards --service math`: our math checker vs math-verify on the same pairs.

Both checkers grade the hand-graded table (rewards/math/cases.py, hostile rows left out: they
would only time math-verify's own timeouts) plus generated variants whose verdicts are known by
construction. Ours runs through MathBackend.score (cold cache, `workers` checker processes, one
calling thread); math-verify runs `verify(parse(gold), parse(completion))` in-process. Throughput
is the median of `repeats` runs, each on freshly generated pairs so no cache carries over.
Beside the speed, both checkers' accuracy on the peer-format table (rewards/math/peer_cases.py:
whole completions in the formats models and datasets write) is printed per format, so a speed
figure is never quoted without the accuracy it was bought with. Then the same for other projects'
own test cases (tests/fixtures/peer: Math-Verify's test suite, hendrycks/math's tests), each case
graded by math-verify with the options its test passed.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from botgrpo_rewards.math import peer_corpora
from botgrpo_rewards.math.cases import CASES
from botgrpo_rewards.math.peer_cases import peer_rows
from botgrpo_rewards.math.service import MathBackend
from botgrpo_rewards.protocol import ScoreRequest, cpu_seconds


@dataclass(frozen=True)
class Pair:
    gold: str
    answer: str
    correct: bool  # the verdict a careful grader gives

    @property
    def completion(self) -> str:
        return f"Working through the problem step by step.\n\nSo the answer is $\\boxed{{{self.answer}}}$."


def table_pairs() -> list[Pair]:
    return [Pair(g, a, ok) for cat, g, a, ok in CASES if cat != "hostile"]


def _integer_pair(rng: random.Random) -> Pair:
    k = rng.randint(0, 999)
    forms = [(f"{k:03d}", True), (f"{k}.0", True), (f"\\frac{{{2 * k}}}{{2}}", True), (str(k + 1), False),
             (f"{k}.5", False), (f"{k:,}", True)]
    answer, ok = rng.choice(forms)
    return Pair(str(k), answer, ok)


def _fraction_pair(rng: random.Random) -> Pair:
    p, q = rng.randint(1, 40), rng.choice([2, 4, 5, 8, 10, 16, 20, 25])
    m = rng.randint(2, 5)
    forms = [(f"\\frac{{{p * m}}}{{{q * m}}}", True), (f"{p / q:g}", True), (f"{p}/{q}", True),
             (f"\\frac{{{p + 1}}}{{{q}}}", False), (f"\\frac{{{q}}}{{{p}}}", p == q)]
    answer, ok = rng.choice(forms)
    return Pair(f"\\frac{{{p}}}{{{q}}}", answer, ok)


def _radical_pair(rng: random.Random) -> Pair:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7])
    forms = [(f"\\sqrt{{{a * a * b}}}", True), (f"{a}\\sqrt{b}", True), (f"\\sqrt{{{a * b}}}", False),
             (f"{a + 1}\\sqrt{{{b}}}", False)]
    answer, ok = rng.choice(forms)
    return Pair(f"{a}\\sqrt{{{b}}}", answer, ok)


def _structure_pair(rng: random.Random) -> Pair:
    x, y = rng.sample(range(-9, 10), 2)
    forms = [("roots", f"x={y}, x={x}", True), ("roots", f"{x}, {y + 20}", False),
             ("tuple", f"({x}, {y})", True), ("tuple", f"({y}, {x})", False)]
    kind, answer, ok = rng.choice(forms)
    gold = f"{x}, {y}" if kind == "roots" else f"({x}, {y})"
    return Pair(gold, answer, ok)


GENERATORS = (_integer_pair, _fraction_pair, _radical_pair, _structure_pair)


def generated_pairs(n: int, seed: int) -> list[Pair]:
    """n distinct generated pairs."""
    rng = random.Random(seed)
    seen: dict[tuple[str, str], Pair] = {}
    while len(seen) < n:
        pair = rng.choice(GENERATORS)(rng)
        seen.setdefault((pair.gold, pair.answer), pair)
    return list(seen.values())


WARMUP = 30  # pairs each checker grades untimed first (imports, first-call set-up)


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the checker workers."""
    return sum(cpu_seconds(pid) or 0.0 for pid in pids)


def _our_grade(backend: MathBackend, gold: str, completion: str) -> bool:
    req = ScoreRequest(id="b", completion=completion, reference={"answer": gold})
    return backend.score(req, time.monotonic() + 30).score == 1.0


def _their_grade(gold: str, completion: str) -> bool:
    from math_verify import parse, verify

    wrapped = gold if "$" in gold or "\\boxed" in gold or "####" in gold else f"${gold}$"
    try:
        return bool(verify(parse(wrapped), parse(completion)))
    except Exception:  # math-verify raising counts as a wrong verdict, as it would for us
        return False


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
    except Exception:
        return False


def corpus_accuracy(workers: int = 1) -> dict[str, tuple[int, int, int, int]]:
    """Per peer corpus (tests/fixtures/peer): (cases, ours right, ours agreeing with the corpus's own
    verdicts, math-verify agreeing with them). "Right" counts our verdict where our convention differs
    on purpose (each such case says why); the other two columns take the corpus's verdicts as they are."""
    backend = MathBackend(workers=workers)
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


def ours(pairs: list[Pair], warmup: list[Pair], workers: int) -> tuple[list[bool], float, float]:
    """Verdicts, wall and CPU seconds (this process + its checker workers) through a fresh MathBackend.

    Start-up and warm-up are excluded."""
    backend = MathBackend(workers=workers)
    backend.start()

    def grade(p: Pair) -> bool:
        return _our_grade(backend, p.gold, p.completion)

    try:
        for p in warmup:
            grade(p)
        pids = backend.pool.pids()
        start, cpu = time.perf_counter(), time.process_time() + _cpu_seconds(pids)
        verdicts = [grade(p) for p in pairs]
        wall = time.perf_counter() - start
        return verdicts, wall, time.process_time() + _cpu_seconds(pids) - cpu
    finally:
        backend.close()


def theirs(pairs: list[Pair], warmup: list[Pair]) -> tuple[list[bool], float, float]:
    """Verdicts, wall and CPU seconds of math-verify on the same completions (warm-up excluded)."""

    def grade(p: Pair) -> bool:
        return _their_grade(p.gold, p.completion)

    for p in warmup:
        grade(p)
    start, cpu = time.perf_counter(), time.process_time()
    verdicts = [grade(p) for p in pairs]
    return verdicts, time.perf_counter() - start, time.process_time() - cpu


def peer_accuracy(workers: int = 1) -> dict[str, tuple[int, int, int]]:
    """Per format of the peer table: (rows, ours right, math-verify right)."""
    backend = MathBackend(workers=workers)
    backend.start()
    counts: dict[str, list[int]] = {}
    try:
        for fmt, gold, completion, ok in peer_rows():
            c = counts.setdefault(fmt, [0, 0, 0])
            c[0] += 1
            c[1] += _our_grade(backend, gold, completion) == ok
            c[2] += _their_grade(gold, completion) == ok
    finally:
        backend.close()
    return {fmt: (n, a, b) for fmt, (n, a, b) in counts.items()}


def run(console: Console, workers: int = 1, n: int = 500, repeats: int = 3) -> dict:
    """Print the comparison table and return the figures."""
    table = table_pairs()
    rates: dict[str, list[float]] = {"ours": [], "theirs": [], "ours_cpu": [], "theirs_cpu": []}
    agree = total = 0
    ours_right = theirs_right = 0
    regressions: list[Pair] = []
    for r in range(repeats):
        pairs = table + generated_pairs(n, seed=r)
        known = {(p.gold, p.answer) for p in pairs}
        warmup = [p for p in generated_pairs(3 * WARMUP, seed=1000 + r) if (p.gold, p.answer) not in known][:WARMUP]
        v_ours, t_ours, c_ours = ours(pairs, warmup, workers)
        v_theirs, t_theirs, c_theirs = theirs(pairs, warmup)
        for key, seconds in (("ours", t_ours), ("theirs", t_theirs), ("ours_cpu", c_ours), ("theirs_cpu", c_theirs)):
            rates[key].append(len(pairs) / max(seconds, 1e-9))
        for p, a, b in zip(pairs, v_ours, v_theirs):
            total += 1
            agree += a == b
            ours_right += a == p.correct
            theirs_right += b == p.correct
            if r == 0 and b == p.correct and a != p.correct:
                regressions.append(p)
    figures = {
        "pairs_per_run": len(table) + n,
        "ours_pairs_per_s": statistics.median(rates["ours"]),
        "math_verify_pairs_per_s": statistics.median(rates["theirs"]),
        "ours_pairs_per_cpu_s": statistics.median(rates["ours_cpu"]),
        "math_verify_pairs_per_cpu_s": statistics.median(rates["theirs_cpu"]),
        "agreement": agree / total,
        "ours_accuracy": ours_right / total,
        "math_verify_accuracy": theirs_right / total,
        "math_verify_right_ours_wrong": [(p.gold, p.answer) for p in regressions],
        "peer_formats": peer_accuracy(workers),
        "peer_corpora": corpus_accuracy(workers),
    }
    _print(console, figures, workers, repeats)
    _print_peer(console, figures["peer_formats"])
    _print_corpora(console, figures["peer_corpora"])
    return figures


def _print(console: Console, f: dict, workers: int, repeats: int) -> None:
    t = Table(title=f"math checker vs math-verify ({f['pairs_per_run']} pairs/run, median of {repeats} runs)")
    t.add_column("checker")
    t.add_column("pairs/s (wall)", justify="right")
    t.add_column("pairs/CPU-s (all processes)", justify="right")
    t.add_column("accuracy vs graded verdicts", justify="right")
    t.add_row(f"botgrpo math ({workers} worker)", f"{f['ours_pairs_per_s']:.0f}", f"{f['ours_pairs_per_cpu_s']:.0f}",
              f"{f['ours_accuracy']:.1%}")
    t.add_row("math-verify 0.9", f"{f['math_verify_pairs_per_s']:.0f}", f"{f['math_verify_pairs_per_cpu_s']:.0f}",
              f"{f['math_verify_accuracy']:.1%}")
    console.print(t)
    wall = f["ours_pairs_per_s"] / f["math_verify_pairs_per_s"]
    cpu = f["ours_pairs_per_cpu_s"] / f["math_verify_pairs_per_cpu_s"]
    console.print(f"throughput ratio (ours / math-verify): {wall:.1f}x wall, {cpu:.1f}x CPU; agreement: {f['agreement']:.1%}")
    wrong = f["math_verify_right_ours_wrong"]
    console.print(f"pairs math-verify grades right and we grade wrong: {len(wrong)}")
    for gold, answer in wrong:
        console.print(f"  gold {gold!r}  answer {answer!r}", markup=False)


def _print_peer(console: Console, by_format: dict[str, tuple[int, int, int]]) -> None:
    t = Table(title="accuracy on the peer-format table (whole completions as models and datasets write them)")
    for name, justify in (("format", "left"), ("rows", "right"), ("botgrpo math", "right"), ("math-verify 0.9", "right")):
        t.add_column(name, justify=justify)
    totals = [0, 0, 0]
    for fmt, (n, a, b) in by_format.items():
        t.add_row(fmt, str(n), f"{a}/{n} = {a / n:.1%}", f"{b}/{n} = {b / n:.1%}")
        totals = [totals[0] + n, totals[1] + a, totals[2] + b]
    n, a, b = totals
    t.add_row("all", str(n), f"{a}/{n} = {a / max(n, 1):.1%}", f"{b}/{n} = {b / max(n, 1):.1%}")
    console.print(t)


def _print_corpora(console: Console, by_corpus: dict[str, tuple[int, int, int, int]]) -> None:
    if not by_corpus:
        console.print(f"peer corpora: none found under {peer_corpora.FIXTURES} (they ship with a source checkout)")
        return
    t = Table(title="accuracy on other projects' own test cases (tests/fixtures/peer)")
    for name in ("corpus", "cases", "botgrpo math", "botgrpo vs their verdicts", "math-verify vs their verdicts"):
        t.add_column(name, justify="left" if name == "corpus" else "right")
    for name, (n, right, raw, theirs) in by_corpus.items():
        t.add_row(name, str(n), *(f"{k}/{n} = {k / n:.1%}" for k in (right, raw, theirs)))
    console.print(t)
    console.print("botgrpo math: our verdict counts where our convention differs on purpose (hedges, decimal comma, "
                  "tolerance; rewards/math/README.md); the other columns take each corpus's verdicts as given.")
