"""`botgrpo bench rewards --service math [--corpus FILE]`: our math checker vs math-verify on the same pairs.

Both checkers grade generated pairs whose verdicts are known by construction (a boxed answer against
its gold: integers, fractions, radicals, root lists, tuples) and, with a corpus, the user's graded
completions (`load_corpus`: one JSON object a line, a `botgrpo reward score` request line plus its
`correct` verdict and an optional `group`; docs/rewards.md). Ours runs through MathBackend.score
(cold cache, `workers` checker processes, one calling thread); math-verify runs
`verify(parse(gold), parse(completion))` in-process. Throughput is the median of `repeats` runs, each
on freshly generated pairs so no cache carries over; beside it each checker's accuracy against the
verdicts, per corpus group, so a speed figure is never quoted without the accuracy it was bought with.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from botgrpo_rewards.bench import CorpusError
from botgrpo_rewards.math.service import MathBackend
from botgrpo_rewards.protocol import ScoreRequest, cpu_seconds

GENERATED = "generated"  # the group of the generated pairs


@dataclass(frozen=True)
class Pair:
    gold: str
    completion: str
    correct: bool  # the verdict a careful grader gives
    group: str = GENERATED
    options: dict = field(default_factory=dict)  # the request's options (rel_tol, ...)


def boxed(gold: str, answer: str, correct: bool) -> Pair:
    """A generated pair: `answer` as the final box of a short solution."""
    return Pair(gold, f"Working through the problem step by step.\n\nSo the answer is $\\boxed{{{answer}}}$.", correct)


def load_corpus(path: Path) -> list[Pair]:
    """A graded corpus: each line a request as `botgrpo reward score` reads it (`completion`,
    `reference.answer`, optionally `options`), with `correct` (true or false: the verdict to grade
    against) and optionally `group` (the row of the accuracy table it counts in; default the file's name)."""
    pairs = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise CorpusError(f"corpus {path}: {err.strerror or err}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"corpus {path}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise CorpusError(f"{where}: not JSON ({err.msg})") from None
        reference, options = row.get("reference") if isinstance(row, dict) else None, row.get("options", {})
        if not (isinstance(row.get("completion"), str) and isinstance(reference, dict)
                and isinstance(reference.get("answer"), str) and isinstance(row.get("correct"), bool)
                and isinstance(options, dict)):
            raise CorpusError(f'{where}: expected {{"completion": TEXT, "reference": {{"answer": GOLD}}, "correct": '
                              f'true|false}} (optional "group": NAME, "options": {{...}}); got {line[:120]}')
        pairs.append(Pair(reference["answer"], row["completion"], row["correct"], str(row.get("group", Path(path).stem)),
                          options))
    if not pairs:
        raise CorpusError(f"corpus {path} has no rows")
    return pairs


def _integer_pair(rng: random.Random) -> Pair:
    k = rng.randint(0, 999)
    forms = [(f"{k:03d}", True), (f"{k}.0", True), (f"\\frac{{{2 * k}}}{{2}}", True), (str(k + 1), False),
             (f"{k}.5", False), (f"{k:,}", True)]
    answer, ok = rng.choice(forms)
    return boxed(str(k), answer, ok)


def _fraction_pair(rng: random.Random) -> Pair:
    p, q = rng.randint(1, 40), rng.choice([2, 4, 5, 8, 10, 16, 20, 25])
    m = rng.randint(2, 5)
    forms = [(f"\\frac{{{p * m}}}{{{q * m}}}", True), (f"{p / q:g}", True), (f"{p}/{q}", True),
             (f"\\frac{{{p + 1}}}{{{q}}}", False), (f"\\frac{{{q}}}{{{p}}}", p == q)]
    answer, ok = rng.choice(forms)
    return boxed(f"\\frac{{{p}}}{{{q}}}", answer, ok)


def _radical_pair(rng: random.Random) -> Pair:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7])
    forms = [(f"\\sqrt{{{a * a * b}}}", True), (f"{a}\\sqrt{b}", True), (f"\\sqrt{{{a * b}}}", False),
             (f"{a + 1}\\sqrt{{{b}}}", False)]
    answer, ok = rng.choice(forms)
    return boxed(f"{a}\\sqrt{{{b}}}", answer, ok)


def _structure_pair(rng: random.Random) -> Pair:
    x, y = rng.sample(range(-9, 10), 2)
    forms = [("roots", f"x={y}, x={x}", True), ("roots", f"{x}, {y + 20}", False),
             ("tuple", f"({x}, {y})", True), ("tuple", f"({y}, {x})", False)]
    kind, answer, ok = rng.choice(forms)
    gold = f"{x}, {y}" if kind == "roots" else f"({x}, {y})"
    return boxed(gold, answer, ok)


GENERATORS = (_integer_pair, _fraction_pair, _radical_pair, _structure_pair)


def generated_pairs(n: int, seed: int) -> list[Pair]:
    """n distinct generated pairs."""
    rng = random.Random(seed)
    seen: dict[tuple[str, str], Pair] = {}
    while len(seen) < n:
        pair = rng.choice(GENERATORS)(rng)
        seen.setdefault((pair.gold, pair.completion), pair)
    return list(seen.values())


WARMUP = 30  # pairs each checker grades untimed first (imports, first-call set-up)


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the checker workers."""
    return sum(cpu_seconds(pid) or 0.0 for pid in pids)


def _our_grade(backend: MathBackend, pair: Pair) -> bool:
    req = ScoreRequest(id="b", completion=pair.completion, reference={"answer": pair.gold}, options=pair.options)
    return backend.score(req, time.monotonic() + 30).score == 1.0


def _their_grade(pair: Pair) -> bool:
    from math_verify import parse, verify

    gold = pair.gold
    wrapped = gold if "$" in gold or "\\boxed" in gold or "####" in gold else f"${gold}$"
    try:
        return bool(verify(parse(wrapped), parse(pair.completion)))
    except Exception:  # math-verify raising counts as a wrong verdict, as it would for us
        return False


def ours(pairs: list[Pair], warmup: list[Pair], workers: int) -> tuple[list[bool], float, float]:
    """Verdicts, wall and CPU seconds (this process + its checker workers) through a fresh MathBackend.

    Start-up and warm-up are excluded."""
    backend = MathBackend(workers=workers)
    backend.start()
    try:
        for p in warmup:
            _our_grade(backend, p)
        pids = backend.pool.pids()
        start, cpu = time.perf_counter(), time.process_time() + _cpu_seconds(pids)
        verdicts = [_our_grade(backend, p) for p in pairs]
        wall = time.perf_counter() - start
        return verdicts, wall, time.process_time() + _cpu_seconds(pids) - cpu
    finally:
        backend.close()


def theirs(pairs: list[Pair], warmup: list[Pair]) -> tuple[list[bool], float, float]:
    """Verdicts, wall and CPU seconds of math-verify on the same completions (warm-up excluded)."""
    for p in warmup:
        _their_grade(p)
    start, cpu = time.perf_counter(), time.process_time()
    verdicts = [_their_grade(p) for p in pairs]
    return verdicts, time.perf_counter() - start, time.process_time() - cpu


def by_group(pairs: list[Pair], v_ours: list[bool], v_theirs: list[bool]) -> dict[str, tuple[int, int, int]]:
    """Per group: (pairs, ours right, math-verify right) against each pair's verdict."""
    counts: dict[str, list[int]] = {}
    for p, a, b in zip(pairs, v_ours, v_theirs):
        c = counts.setdefault(p.group, [0, 0, 0])
        c[0] += 1
        c[1] += a == p.correct
        c[2] += b == p.correct
    return {group: (n, a, b) for group, (n, a, b) in counts.items()}


def run(console: Console, workers: int = 1, n: int = 500, repeats: int = 3, corpus: Path | None = None) -> dict:
    """Print the comparison tables and return the figures (`corpus`: a graded file, load_corpus)."""
    given = load_corpus(corpus) if corpus is not None else []
    rates: dict[str, list[float]] = {"ours": [], "theirs": [], "ours_cpu": [], "theirs_cpu": []}
    agree = total = 0
    groups: dict[str, tuple[int, int, int]] = {}
    regressions: list[Pair] = []
    for r in range(repeats):
        pairs = given + generated_pairs(n, seed=r)
        known = {(p.gold, p.completion) for p in pairs}
        warmup = [p for p in generated_pairs(3 * WARMUP, seed=1000 + r)
                  if (p.gold, p.completion) not in known][:WARMUP]
        v_ours, t_ours, c_ours = ours(pairs, warmup, workers)
        v_theirs, t_theirs, c_theirs = theirs(pairs, warmup)
        for key, seconds in (("ours", t_ours), ("theirs", t_theirs), ("ours_cpu", c_ours), ("theirs_cpu", c_theirs)):
            rates[key].append(len(pairs) / max(seconds, 1e-9))
        total += len(pairs)
        agree += sum(a == b for a, b in zip(v_ours, v_theirs))
        if r == 0:  # verdicts do not change between runs: the accuracy of the first
            groups = by_group(pairs, v_ours, v_theirs)
            regressions = [p for p, a, b in zip(pairs, v_ours, v_theirs) if b == p.correct and a != p.correct]
    figures = {
        "pairs_per_run": len(given) + n,
        "ours_pairs_per_s": statistics.median(rates["ours"]),
        "math_verify_pairs_per_s": statistics.median(rates["theirs"]),
        "ours_pairs_per_cpu_s": statistics.median(rates["ours_cpu"]),
        "math_verify_pairs_per_cpu_s": statistics.median(rates["theirs_cpu"]),
        "agreement": agree / total,
        "groups": groups,
        "math_verify_right_ours_wrong": [(p.gold, p.completion) for p in regressions],
    }
    _print(console, figures, workers, repeats)
    _print_groups(console, groups)
    return figures


def _print(console: Console, f: dict, workers: int, repeats: int) -> None:
    n, ours_right, theirs_right = (sum(c[i] for c in f["groups"].values()) for i in range(3))
    t = Table(title=f"math checker vs math-verify ({f['pairs_per_run']} pairs/run, median of {repeats} runs)")
    t.add_column("checker")
    t.add_column("pairs/s (wall)", justify="right")
    t.add_column("pairs/CPU-s (all processes)", justify="right")
    t.add_column("accuracy vs the verdicts", justify="right")
    t.add_row(f"botgrpo math ({workers} worker)", f"{f['ours_pairs_per_s']:.0f}", f"{f['ours_pairs_per_cpu_s']:.0f}",
              f"{ours_right / n:.1%}")
    t.add_row("math-verify 0.9", f"{f['math_verify_pairs_per_s']:.0f}", f"{f['math_verify_pairs_per_cpu_s']:.0f}",
              f"{theirs_right / n:.1%}")
    console.print(t)
    wall = f["ours_pairs_per_s"] / f["math_verify_pairs_per_s"]
    cpu = f["ours_pairs_per_cpu_s"] / f["math_verify_pairs_per_cpu_s"]
    console.print(f"throughput ratio (ours / math-verify): {wall:.1f}x wall, {cpu:.1f}x CPU; agreement: {f['agreement']:.1%}")
    wrong = f["math_verify_right_ours_wrong"]
    console.print(f"pairs math-verify grades right and we grade wrong: {len(wrong)}")
    for gold, completion in wrong:
        console.print(f"  gold {gold!r}  completion ...{completion[-80:]!r}", markup=False)


def _print_groups(console: Console, groups: dict[str, tuple[int, int, int]]) -> None:
    t = Table(title="accuracy per group (generated: answers boxed; other groups: the corpus's)")
    for name, justify in (("group", "left"), ("pairs", "right"), ("botgrpo math", "right"), ("math-verify 0.9", "right")):
        t.add_column(name, justify=justify)
    for group, (n, a, b) in groups.items():
        t.add_row(group, str(n), f"{a}/{n} = {a / n:.1%}", f"{b}/{n} = {b / n:.1%}")
    console.print(t)
