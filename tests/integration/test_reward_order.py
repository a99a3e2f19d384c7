"""The reward contract on real texts scored by the real services (sympy math, Node react): the mean
token reward (score on every token plus spans where they fall) is ordered correct > partly right >
failed attempt > no attempt, and BoT-GRPO gives a no-attempt completion's tokens a lower advantage
than every clean token of a failed attempt.

Texts are the synthetic tasks' own formats (arith_synth solutions with their realistic slips,
react_synth components with their injected faults) plus the refusals, empty answers and
truncations a real model produces. Tokens: the BPE tokenizer `botgrpo bootstrap` trains for these
tasks, and one token per character (the bound in rewards/contract.py holds for any tokenizer).
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.algos.spans import project_spans, token_rewards
from botgrpo_cli.bootstrap.tokenizer import train_tokenizer
from botgrpo_cli.reward_client import RewardPool
from botgrpo_cli.rollout.offsets import OffsetDecoder
from botgrpo_tasks.arith_synth import make_task as arith_task, solution
from botgrpo_tasks.react_synth import make_task as react_task
from botgrpo_tasks.react_synth_grammar import FAULTS, constructs, render

ORDER = ("correct", "partly right", "failed attempt", "no attempt")
REFUSALS = ["", "Sorry, I cannot.", "I'm not able to help with that request.", "Let me think about it more and more"]


# --------------------------------------------------------------------------------- math texts

def _wrong_box(text: str) -> str:
    return re.sub(r"\\boxed\{(\d+)\}", lambda m: f"\\boxed{{{int(m.group(1)) + 1}}}", text)


def _every_step_off(text: str) -> str:
    """Each step's result one too high, operands kept: several false equalities and a wrong answer."""
    return re.sub(r"= (\d+)", lambda m: f"= {int(m.group(1)) + 1}", _wrong_box(text))


def math_table() -> list[tuple[str, str, str, str]]:
    """(outcome, name, completion, gold) for arith_synth problems, the format the task trains on."""
    rows = []
    for k, item in enumerate(arith_task().corpus_items(40)[:12:3]):
        p, gold = item.problem, str(item.problem.answer())
        good = solution(p)
        slipped = solution(p, frozenset({0}))  # the first product one row off; the error propagates
        body = good[: good.index("\\boxed")]
        rows += [
            ("correct", f"{k}/solution", good, gold),
            ("correct", f"{k}/corrected slip", slipped.replace("\\boxed", "Rechecking: " + good.split("\n\n")[0] + "\n\n\\boxed")
             .rsplit("\\boxed", 1)[0] + f"\\boxed{{{gold}}}", gold),
            ("partly right", f"{k}/right steps wrong box", _wrong_box(good), gold),
            ("failed attempt", f"{k}/slip", slipped, gold),
            ("failed attempt", f"{k}/every step wrong", _every_step_off(good), gold),
            ("failed attempt", f"{k}/bare wrong box", _wrong_box(f"\\boxed{{{gold}}}"), gold),
            ("no attempt", f"{k}/truncated before the box", body, gold),
            ("no attempt", f"{k}/hedged", body + f"\\boxed{{{gold}}} or \\boxed{{{int(gold) + 1}}}", gold),
            ("no attempt", f"{k}/unclosed boxes", "\\boxed{" * 12, gold),  # a collapsed policy's output
            ("no attempt", f"{k}/rambles", (body.split("\n\n")[0] + "\n\n") * 8, gold),
        ]
        rows += [("no attempt", f"{k}/refusal {i}", text, gold) for i, text in enumerate(REFUSALS)]
    return rows


def matched_math_pairs() -> list[tuple[str, str, str]]:
    """(partly right, failed attempt, gold) of the same shape: one step's result differs."""
    pairs = []
    for item in arith_task().corpus_items(40)[:12:3]:
        good, gold = _wrong_box(solution(item.problem)), str(item.problem.answer())
        first = re.search(r"= (\d+)", good)
        bad = good[: first.start(1)] + str(int(first.group(1)) + 1) + good[first.end(1):]
        pairs.append((good, bad, gold))
    return pairs


# --------------------------------------------------------------------------------- react texts

F = "```"
TYPE_ERRORS = ['  const n: number = "one";\n', "  const s: string = 42;\n", "  const b: boolean = null;\n"]


def _inject(code: str, lines: list[str]) -> str:
    """Type errors after the first line of the component body (syntax stays valid)."""
    at = code.index("{\n", code.index("export function")) + 2
    return code[:at] + "".join(lines) + code[at:]


def react_table() -> list[tuple[str, str, str]]:
    """(outcome, name, completion) for react_synth specs, with prose and fences as models write them."""
    rows = []
    for k, item in enumerate(react_task().corpus_items(40)[:16:4]):
        spec = item.spec
        good = render(spec)
        fault = sorted(f for f, where in FAULTS.items() if where in constructs(spec))[0]
        faults = frozenset(f for f, where in FAULTS.items() if where in constructs(spec))
        rows += [
            ("correct", f"{k}/bare", good),
            ("correct", f"{k}/fenced", f"Here is the component:\n\n{F}tsx\n{good}{F}\n"),
            ("partly right", f"{k}/one type error", f"{F}tsx\n{_inject(good, TYPE_ERRORS[:1])}{F}\n"),
            ("partly right", f"{k}/three type errors", _inject(good, TYPE_ERRORS)),
            ("failed attempt", f"{k}/{fault}", render(spec, frozenset({fault}))),
            ("failed attempt", f"{k}/every fault", render(spec, faults)),
            ("failed attempt", f"{k}/truncated in the jsx", f"{F}tsx\n{good[: good.index('<', good.index('return')) + 6]}"),
            ("no attempt", f"{k}/truncated before any jsx", f"{F}tsx\n{good[: good.index('return')]}"),
            ("no attempt", f"{k}/no jsx", f"{F}ts\nexport function add(a: number, b: number) {{\n  return a + b;\n}}\n{F}\n"),
            ("no attempt", f"{k}/prose", "A component like this keeps its state in a hook and renders a list."),
            ("no attempt", f"{k}/reasoning cut off", f"<think>\nThe spec wants a list.\n{F}tsx\n{good}"),
        ]
        rows += [("no attempt", f"{k}/refusal {i}", text) for i, text in enumerate(REFUSALS)]
    return rows


# --------------------------------------------------------------------------------- token rewards

@pytest.fixture(scope="module")
def bpe():
    texts = [c for _, c in arith_task().corpus(400)] + [c for _, c in react_task().corpus(400)]
    return OffsetDecoder(train_tokenizer(texts, 600))


def offsets(decoder: OffsetDecoder | None, text: str, finished: bool) -> list[tuple[int, int]]:
    """Each token's code points; a finished completion ends with EOS (a token with no characters)."""
    if decoder is None:
        out = [(i, i + 1) for i in range(len(text))]
    else:
        decoded, out = decoder.decode(decoder.tok.encode(text, add_special_tokens=False))
        assert decoded == text
    return out + [(len(text), len(text))] * finished


def rewards(responses, texts, decoder, finished=True):
    """(r (B, T), mask (B, T), scores (B,)) exactly as the trainer builds them (docs/algorithms.md §1)."""
    offs = [offsets(decoder, t, finished) for t in texts]
    width = max(len(o) for o in offs)
    spans = [[(s.start, s.end, s.reward) for s in r.spans] for r in responses]
    mask = torch.tensor([[t < len(o) for t in range(width)] for o in offs])
    scores = torch.tensor([r.score for r in responses])
    return token_rewards(scores, project_spans(spans, offs, width), mask), mask, scores


def means(responses, texts, decoder, finished=True) -> list[float]:
    r, mask, _ = rewards(responses, texts, decoder, finished)
    return (r.sum(1) / mask.sum(1).clamp(min=1)).tolist()


def score_all(pool: RewardPool, completions: list[str], reference: dict | list[dict], options: dict):
    refs = reference if isinstance(reference, list) else [reference] * len(completions)
    got = pool.score([{"id": i, "completion": c, "reference": ref, "options": options, "deadline_ms": 60_000}
                      for i, (c, ref) in enumerate(zip(completions, refs))])
    assert all(r.ok for r in got), [r for r in got if not r.ok]
    return got


def assert_ordered(outcomes: list[str], names: list[str], values: list[float]) -> None:
    """Every completion of a better outcome has a higher mean than every one of a worse outcome."""
    bad = [(names[i], round(values[i], 3), names[j], round(values[j], 3))
           for i, j in itertools.product(range(len(names)), repeat=2)
           if ORDER.index(outcomes[i]) < ORDER.index(outcomes[j]) and not values[i] > values[j]]
    assert bad == []


def check_order_everywhere(outcomes, names, responses, texts, bpe) -> None:
    """The order with EOS (finished), without (cut at the token limit: an empty text cannot be),
    and with one token per character."""
    for decoder, finished in [(bpe, True), (bpe, False), (None, True)]:
        keep = [i for i, t in enumerate(texts) if finished or t]
        values = means([responses[i] for i in keep], [texts[i] for i in keep], decoder, finished)
        assert_ordered([outcomes[i] for i in keep], [names[i] for i in keep], values)


def assert_no_attempt_below_clean_failed_tokens(outcomes, responses, texts, decoder) -> None:
    """One group holding every outcome: BoT-GRPO's advantages of the no-attempt tokens are below
    those of every clean token (no span on it) of a failed attempt."""
    r, mask, scores = rewards(responses, texts, decoder)
    rho = r - scores[:, None] * mask
    adv = compute_advantages("bot_grpo", token_rewards=r, scores=scores, mask=mask,
                             group_ids=torch.zeros(len(texts), dtype=torch.long))
    silent = [i for i, o in enumerate(outcomes) if o == "no attempt"]
    failed = [i for i, o in enumerate(outcomes) if o == "failed attempt"]
    top_silent = max(adv[i][mask[i]].max().item() for i in silent)
    clean = [adv[i][mask[i] & (rho[i] == 0)] for i in failed]
    assert all(len(c) for c in clean)  # every failed attempt has clean tokens (EOS at least)
    assert top_silent < min(c.min().item() for c in clean)


# --------------------------------------------------------------------------------- math

@pytest.fixture(scope="module")
def math_pool():
    with RewardPool("math") as pool:
        yield pool


@pytest.mark.parametrize("options", [{"steps": True}, {"steps": False}, {"steps": True, "step_credit": 0}],
                         ids=["steps", "no steps", "steps without credit"])
def test_math_outcomes_are_ordered(math_pool, bpe, options):
    outcomes, names, texts, golds = zip(*math_table())
    if not options["steps"]:  # without step checks, a right-steps wrong answer is just a wrong answer
        outcomes = ["failed attempt" if o == "partly right" else o for o in outcomes]
    got = score_all(math_pool, list(texts), [{"answer": g} for g in golds], options)
    for o, r in zip(outcomes, got):  # the texts are what their row says
        assert r.metrics["extracted"] == (o != "no attempt") and r.metrics["correct"] == (o == "correct"), r
    check_order_everywhere(outcomes, names, got, texts, bpe)


def test_math_right_steps_beat_a_wrong_step_of_the_same_shape(math_pool, bpe):
    for partly, failed, gold in matched_math_pairs():
        got = score_all(math_pool, [partly, failed], {"answer": gold}, {"steps": True})
        assert [r.metrics["steps_wrong"] for r in got] == [0, 1]
        for decoder in (bpe, None):
            good, bad = means(got, [partly, failed], decoder)
            assert good > bad, (partly, failed, good, bad)


def test_math_group_pays_no_attempt_less_than_clean_tokens_of_a_failure(math_pool, bpe):
    outcomes, _, texts, golds = zip(*[row for row in math_table() if row[1].startswith("0/")])
    got = score_all(math_pool, list(texts), [{"answer": g} for g in golds], {"steps": True})
    assert_no_attempt_below_clean_failed_tokens(outcomes, got, list(texts), bpe)


# --------------------------------------------------------------------------------- react

@pytest.fixture(scope="module")
def react_pool():
    with RewardPool("react") as pool:
        yield pool


@pytest.mark.parametrize("options", [{}, {"types": False}, {"pass_credit": 0.3}], ids=["types", "syntax only", "pass credit"])
def test_react_outcomes_are_ordered(react_pool, bpe, options):
    outcomes, names, texts = zip(*react_table())
    if options.get("types") is False:  # type errors are not checked: those components pass
        outcomes = ["correct" if o == "partly right" else o for o in outcomes]
    got = score_all(react_pool, list(texts), {}, options)
    for o, r in zip(outcomes, got):
        assert r.metrics["syntax_ok"] == (o in ("correct", "partly right")), r
        assert (r.info.get("code") in ("no_component", "reasoning_truncated")) == (o == "no attempt"), r
    check_order_everywhere(outcomes, names, got, texts, bpe)


def test_react_group_pays_no_attempt_less_than_clean_tokens_of_a_failure(react_pool, bpe):
    outcomes, _, texts = zip(*[row for row in react_table() if row[1].startswith("0/")])
    for options in ({}, {"types": False}):
        got = score_all(react_pool, list(texts), {}, options)
        assert_no_attempt_below_clean_failed_tokens(outcomes, got, list(texts), bpe)
