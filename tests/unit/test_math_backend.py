"""MathBackend.score called directly: verdicts, spans, metrics, steps, hostile input, the pool."""

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from botgrpo_rewards.backend import BackendError, BackendTimeout
from math_cases import CASES
from botgrpo_rewards.math.service import MathBackend
from botgrpo_rewards.protocol import ScoreRequest, validate_spans


@pytest.fixture(scope="module")
def backend():
    b = MathBackend(workers=2, check_limit_s=1.0)
    b.start()
    yield b
    b.close()


BASE_METRICS = {"correct", "extracted", "steps", "steps_wrong", "repeats"}
STEP_METRICS = {"steps_grounded", "steps_ungrounded", "faithful"}  # only with the steps option


def score(b, completion, gold, deadline_s=10.0, prompt="", **options):
    req = ScoreRequest(id="t", completion=completion, prompt=prompt, reference={"answer": gold}, options=options)
    start = time.monotonic()
    result = b.score(req, start + deadline_s)
    assert time.monotonic() - start < deadline_s + 30  # the deadline ends the check (room for a busy machine)
    validate_spans(result.spans, len(completion))  # sorted, non-overlapping, inside the text
    assert set(result.metrics) == BASE_METRICS | (STEP_METRICS if options.get("steps") else set())
    return result


def test_table_through_the_backend(backend):
    wrong = []
    for _, gold, answer, expected in CASES:
        r = score(backend, f"Some work.\n\nSo the answer is \\boxed{{{answer}}}.", gold, deadline_s=60.0)  # a busy machine
        if (r.score == 1.0) is not expected:
            wrong.append((gold, answer, r.info["reason"]))
    assert wrong == []


def test_peer_format_table_through_the_backend(backend):
    # whole completions as models and datasets write them (Minerva, PRM800K, GSM8K, <think>, bare...)
    from math_peer_cases import peer_rows

    wrong = [(fmt, gold, completion[-60:]) for fmt, gold, completion, expected in peer_rows()
             if (score(backend, completion, gold, deadline_s=60.0).score == 1.0) is not expected]
    assert wrong == []


def test_correct_answer_span_and_info(backend):
    text = "We add them: $3+4=7$.\n\nThe answer is $\\boxed{7}$."
    r = score(backend, text, "7")
    assert r.score == 1.0 and r.metrics["correct"] == 1.0 and r.metrics["extracted"] == 1.0
    [span] = r.spans
    assert (text[span.start : span.end], span.reward) == ("7", 1.0)
    assert r.info["answer"] == "7" and r.info["gold"] == "7"


def test_wrong_and_missing_answers(backend):
    r = score(backend, "\\boxed{8}", "7")
    assert r.score == 0.0 and [s.reward for s in r.spans] == [-0.5]
    r = score(backend, "Step one.\n\nI give up.  \n", "7")
    # No answer costs through the score (every token, EOS included), plus a span on the last line.
    assert r.score == -1.0 and r.metrics["extracted"] == 0.0 and r.info["reason"]
    assert [(s.start, s.end, s.reward, s.label) for s in r.spans] == [(11, 21, -0.5, "no_answer")]
    r = score(backend, "\\boxed{7} or \\boxed{8}", "7")
    assert r.score == -1.0 and r.metrics["extracted"] == 0.0
    r = score(backend, "", "7")
    assert (r.score, r.spans) == (-1.0, [])


def test_numeric_gold_is_accepted(backend):
    assert score(backend, "\\boxed{204}", 204).score == 1.0


@pytest.mark.parametrize("reference,options", [({}, {}), ({"answer": ["x"]}, {}), ({"answer": "1"}, {"steps": "yes"})])
def test_bad_requests_raise_backend_error(backend, reference, options):
    with pytest.raises(BackendError):
        backend.score(ScoreRequest(id="b", completion="\\boxed{1}", reference=reference, options=options), time.monotonic() + 5)


def test_passed_deadline_is_a_timeout(backend):
    with pytest.raises(BackendTimeout):
        backend.score(ScoreRequest(id="d", completion="\\boxed{\\frac{1}{7}}", reference={"answer": "2/14"}), time.monotonic() - 1)


STEPS = "Step 1: 3 * 4 = 12.\nStep 2: 12 + 5 = 18.\nStep 3: 18 / 2 = 9.\nStep 4: So the answer is \\boxed{9}."
PROMPT = "Tom has 3 boxes of 4 pens. He buys 5 more, gives 8 away and shares the rest between 2 friends."


def test_first_false_step_gets_a_negative_span_and_true_steps_credit(backend):
    r = score(backend, STEPS, "9", prompt=PROMPT, steps=True)
    assert r.metrics["steps"] == 4 and r.metrics["steps_wrong"] == 1
    assert r.score == 1.0  # the outcome is judged separately from the steps
    got = [(STEPS[s.start : s.end], s.reward, s.label) for s in r.spans]
    # step 3 is true, but 18 is the result of the false step 2, so it is not grounded: no credit
    assert got == [("Step 1: 3 * 4 = 12.", 0.25, "step_ok"), ("Step 2: 12 + 5 = 18.", -0.5, "step"), ("9", 1.0, "answer")]
    assert (r.metrics["steps_grounded"], r.metrics["steps_ungrounded"], r.metrics["faithful"]) == (1, 1, 0)
    assert "12 + 5 = 18" in r.info["first_wrong_step"]
    r = score(backend, STEPS, "9", prompt=PROMPT, steps=True, grounding=False)  # the pre-#27 rule
    assert [s.label for s in r.spans] == ["step_ok", "step", "step_ok", "answer"]


def test_steps_off_by_default_and_true_steps_unpenalised(backend):
    assert score(backend, STEPS, "9").metrics["steps"] == 0
    good = STEPS.replace("= 18", "= 17").replace("18 / 2 = 9", "17 - 8 = 9")
    r = score(backend, good, "9", prompt=PROMPT, steps=True)
    assert r.metrics["steps_wrong"] == 0 and [s.label for s in r.spans] == ["step_ok"] * 3 + ["answer"]
    assert (r.metrics["steps_grounded"], r.metrics["steps_ungrounded"], r.metrics["faithful"]) == (3, 0, 1)
    r = score(backend, good, "9", prompt=PROMPT, steps=True, step_credit=0)
    assert [s.label for s in r.spans] == ["answer"]


def test_step_credit_cannot_be_farmed(backend):
    # What a bot_grpo policy learned on arith_synth: trivial equalities and repeated true lines.
    text = "3 * 4 = 12\n\n2 = 2\n\n12 = 12\n\n3 * 4 = 12\n\n12 + 5 = 17\n\n\\boxed{17}"
    r = score(backend, text, "17", prompt=PROMPT, steps=True)
    credited = [text[s.start : s.end] for s in r.spans if s.label == "step_ok"]
    assert credited == ["3 * 4 = 12", "12 + 5 = 17"] and r.metrics["steps_wrong"] == 0


def test_no_step_credit_without_an_answer(backend):
    r = score(backend, "3 * 4 = 12\n\n12 + 5 = 17", "17", steps=True)
    assert r.score == -1.0 and [s.label for s in r.spans] == ["no_answer"]


@pytest.mark.parametrize("options,says", [
    ({"missing_score": 0.0}, "'wrong answer' can earn a mean token reward as low as -0.5 but 'no answer' as high as 0"),
    ({"steps": True, "step_credit": 0.6}, "'correct answer' can earn a mean token reward as low as 0.5"),
    ({"answer_penalty": 1.0}, "'wrong answer'"),
    ({"step_credit": 1.5}, "option 'step_credit' must be a number in [0, 1]"),
    ({"missing_score": True}, "option 'missing_score' must be a number"),
    ({"stpes": True}, "unknown math option(s) stpes;"),
    ({"think_tags": None, "step_credit": 2}, "option 'step_credit' must be a number in [0, 1]"),  # think options pass
])
def test_options_that_break_the_order_are_refused(backend, options, says):
    with pytest.raises(BackendError) as err:
        score(backend, "\\boxed{1}", "1", **options)
    assert says in str(err.value) and err.value.type == "bad_request"


def test_unknown_option_error_names_each_known_option_once(backend):
    with pytest.raises(BackendError) as err:
        score(backend, "\\boxed{1}", "1", stpes=True)
    known = str(err.value).split("known: ", 1)[1].split(", ")
    assert "think_tags" in known and "think_open" in known and len(known) == len(set(known))


def test_unparseable_steps_are_not_checked(backend):
    text = "Let x be the number.\n\n2x + 3 = 7 means 2x = 4.\n\nf(2) = 5 here.\n\n\\boxed{2}"
    r = score(backend, text, "2", steps=True)
    assert r.metrics["steps"] == 4 and r.metrics["steps_wrong"] == 0


def test_step_span_is_trimmed_before_the_answer(backend):
    text = "Adding, 2 + 2 = 5 so \\boxed{5}"
    r = score(backend, text, "4", steps=True)
    step, answer = r.spans
    assert step.end <= answer.start and text[step.start : step.end].startswith("Adding, 2 + 2 = 5")
    assert r.metrics["steps_wrong"] == 1


@pytest.mark.parametrize("answer", ["10^{10^{10^{10}}}", "100000!", "{" * 5000 + "1" + "}" * 5000,
                                    "\x00\x00", "\ud800", "__import__('os').system('touch /tmp/pwned_math')"])
def test_hostile_answers_are_wrong_fast_and_harmless(backend, answer):
    r = score(backend, f"\\boxed{{{answer}}}", "5", deadline_s=5.0)
    assert r.score == 0.0
    assert not os.path.exists("/tmp/pwned_math")


def test_megabyte_completion_with_nul_and_surrogates(backend):
    text = ("1 + 1 = 2 \x00 \ud800 " * 60_000)[:1_000_000] + "\n\n\\boxed{2}"
    r = score(backend, text, "2", deadline_s=10.0, steps=True)
    assert r.score == 1.0 and r.metrics["steps_wrong"] == 0


def test_big_symbolic_power_is_judged_by_evaluation_not_expansion(backend):
    r = score(backend, "\\boxed{(a+b+c+d+e)^{100}}", "1", deadline_s=5.0)
    assert r.score == 0.0 and r.info["reason"] == "not equal"


def test_overrunning_check_is_a_timeout_never_wrong_and_never_cached(backend):
    # A check that runs out of CPU time says nothing about the answer: status timeout (the
    # trainer masks and counts it), and the next identical request is checked again.
    req = ScoreRequest(id="s", completion="\\boxed{\\binom{10^{10}}{10^{9}}}", reference={"answer": "1"})
    for attempt in range(2):
        replaced = backend.pool.replaced
        with pytest.raises(BackendTimeout, match="CPU seconds"):  # no wall-clock bound: that is load's
            backend.score(req, time.monotonic() + 120)
        assert backend.pool.replaced == replaced + 1  # killed again: the timeout was not cached
    assert score(backend, "\\boxed{\\frac{2}{6}}", "1/3").score == 1.0


def test_check_limit_counts_cpu_not_wall_time(stop_process):
    # A worker that is stopped (no CPU at all, as on a saturated machine) is not timed out by the
    # CPU limit; only the wall-clock bound (the request's deadline) ends the wait.
    from botgrpo_rewards.math.pool import JobTimeout, WorkerPool

    pool = WorkerPool(1)
    pool.start()
    try:
        [pid] = pool.pids()
        stop_process(pid)
        threading.Timer(1.5, os.kill, (pid, signal.SIGCONT)).start()
        start = time.monotonic()
        assert pool.run("answer", ["\\frac{1}{2}", "0.5"], 0.5, 10.0)[0] is True
        assert time.monotonic() - start >= 1.4  # waited past the 0.5 CPU-second limit, then answered
        with pytest.raises(JobTimeout):
            pool.run("answer", ["\\binom{10^{10}}{10^{9}}", "1"], 0.5, 10.0)
    finally:
        pool.close()


def test_pool_survives_a_killed_worker(backend):
    for pid in backend.pool.pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert score(backend, "\\boxed{\\sqrt{8}}", "2\\sqrt{2}").score == 1.0
    assert score(backend, "\\boxed{\\sqrt{18}}", "3\\sqrt{2}").score == 1.0


def test_thread_safe_under_concurrency(backend):
    pairs = [(f"\\boxed{{\\frac{{{i}}}{{{i + 1}}}}}", f"{i}/{i + 1}", True) for i in range(1, 30)]
    pairs += [(f"\\boxed{{{i}.5}}", f"{i}", False) for i in range(30)]
    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(lambda p: score(backend, p[0], p[1]).score, pairs))
    assert results == [1.0 if ok else 0.0 for *_, ok in pairs]


def test_decimals_are_exact_unless_the_request_sets_rel_tol(backend):
    assert score(backend, "\\boxed{0.333}", "\\frac{1}{3}").score == 0.0
    assert score(backend, "\\boxed{6.28}", "2\\pi").score == 0.0
    assert score(backend, "\\boxed{0.333}", "\\frac{1}{3}", rel_tol=1e-3).score == 1.0
    assert score(backend, "\\boxed{6.28}", "2\\pi", rel_tol=1e-3).score == 1.0
    assert score(backend, "\\boxed{6.2}", "2\\pi", rel_tol=1e-3).score == 0.0
    assert score(backend, "\\boxed{0.5}", "\\frac{1}{2}").score == 1.0  # exactly equal decimals need no tolerance


@pytest.mark.parametrize("options", [{"rel_tol": -1}, {"rel_tol": "1e-3"}, {"rel_tol": 0.5}, {"rel_tol": True},
                                     {"think_tags": ["<t>"]}, {"think_tags": "<think>"}])
def test_bad_options_are_bad_requests(backend, options):
    with pytest.raises(BackendError):
        backend.score(ScoreRequest(id="o", completion="\\boxed{1}", reference={"answer": "1"}, options=options),
                      time.monotonic() + 5)


def test_think_blocks_and_configurable_tags(backend):
    assert score(backend, "<think>so \\boxed{7}</think>The answer is 8.", "8").score == 1.0
    r = score(backend, "<think>the answer is 8, \\boxed{8}", "8")  # cut off while thinking: no attempt
    assert r.score == -1.0 and r.metrics["extracted"] == 0.0 and "unclosed" in r.info["reason"]
    tags = ["<reasoning>", "</reasoning>"]
    assert score(backend, "<reasoning>\\boxed{7}</reasoning>\\boxed{8}", "8", think_tags=tags).score == 1.0
    assert score(backend, "<think>x</think> \\boxed{8}", "8", think_tags=None).score == 1.0
    # the prompt opened the block (R1-style templates): the completion starts inside the reasoning
    assert score(backend, "so it is 8\n</think>\n\\boxed{8}", "8", think_open=True).score == 1.0
    r = score(backend, "so it is \\boxed{8}, still thinking", "8", think_open=True)
    assert r.score == -1.0 and r.metrics["extracted"] == 0.0


@pytest.mark.parametrize("gold", ["$\\frac{1}{2}$", "The answer is $\\frac12$.", "We halve it: $\\boxed{0.5}$.",
                                  "x = 1/2"])
def test_gold_is_normalised_like_the_completion(backend, gold):
    assert score(backend, "Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", gold).score == 1.0
