"""Reward functions called as TRL 1.16 calls them, through FunctionPool with real worker processes
(callables forked, specs imported from a user's file): any finite score, None dropping one function
only, TRL's keywords, messages for conversational data, async functions, prefixed output, copies the
function may change, the protocol's span checks, a memory bound, and failures that cost one batch."""

from __future__ import annotations

import asyncio
import math

import pytest

from botgrpo_cli.reward_client.functions import FunctionPool
from botgrpo_rewards.protocol import ScoreRequest

# TRL's documented quickstart rewards, as a user copies them into a file
QUICKSTART = '''
def reward_num_unique_chars(completions, **kwargs):
    """Reward function that rewards completions with more unique letters."""
    return [float(len(set(completion))) for completion in completions]


def reward_len(completions, **kwargs):
    return [-abs(20 - len(completion)) for completion in completions]
'''


def _requests(*texts: str, **reference) -> list[ScoreRequest]:
    return [ScoreRequest(id=f"r{i}", completion=t, prompt=f"p{i}", reference=dict(reference), deadline_ms=20_000)
            for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "rewards.py"
    path.write_text(QUICKSTART)
    return path


def test_quickstart_scores_of_any_size_are_summed_raw_with_weights(quickstart):
    texts = ("aaaa", "abcdefghijklmnopqrstuvwxyz")
    with FunctionPool([f"{quickstart}:reward_num_unique_chars", f"{quickstart}:reward_len"], weights=[1.0, 0.5]) as pool:
        a, b = pool.score_batch(_requests(*texts))
    assert a.ok and a.score == pytest.approx(1 + 0.5 * -16) and b.score == pytest.approx(26 + 0.5 * -6)
    assert a.metrics["reward_num_unique_chars/score"] == 1.0 and a.metrics["reward_len/score"] == -16.0
    assert "success" not in a.metrics  # no success rule: n/a, not score > 0


def test_none_drops_one_function_for_that_row_only_and_all_none_masks():
    def half(completions, **kw):
        return [None if i % 2 else 1.0 for i in range(len(completions))]

    def length(completions, **kw):
        return [float(len(c)) for c in completions]

    def nothing(completions, **kw):
        return [float("nan")] * len(completions)  # NaN is TRL's None

    with FunctionPool([half, length]) as pool:
        rows = pool.score_batch(_requests("ab", "abc", "abcd", "abcde"))
    assert all(r.ok for r in rows)
    assert [r.score for r in rows] == [3.0, 3.0, 5.0, 5.0]  # 1 + len, or len alone where half said None
    assert "half/score" not in rows[1].metrics and rows[1].metrics["length/score"] == 3.0
    with FunctionPool([half, nothing]) as pool:
        first, second = pool.score_batch(_requests("x", "y"))
    assert first.ok and first.score == 1.0
    assert not second.usable and second.error.type == "not_scorable" and "half, nothing" in second.error.message


def test_trl_keywords_messages_async_and_one_call_per_batch(capfd):
    from trl.rewards import think_format_reward

    calls = []

    def keywords(prompts, completions, completion_ids, trainer_state, log_metric, log_extra, answer, **kw):
        calls.append(len(completions))
        print(f"step {trainer_state.global_step} of {trainer_state.max_steps}")
        import os
        os.write(2, b"written below Python\n")  # what C code or a program it starts would write
        print("no newline at the end", end="")
        log_metric("ids_mean", sum(map(len, completion_ids)) / len(completion_ids))
        log_extra("first_role", [p[0]["role"] for p in prompts])
        return [float(len(ids)) for ids in completion_ids]

    async def later(completions, **kw):
        await asyncio.sleep(0.01)
        return [0.5 for _ in completions]

    chat = [{"role": "user", "content": "Think first."}]
    texts = ("<think>\nhmm\n</think>\n4", "no tags")
    extras = {"messages": [chat, chat], "completion_ids": [[1, 2, 3], [4]],
              "trainer_state": {"global_step": 3, "max_steps": 10, "epoch": 0.5}}
    with FunctionPool([think_format_reward, keywords, later]) as pool:
        futures = pool.submit_batch(_requests(*texts, answer="4"), extras)
        good, bad = [f.result(timeout=60) for f in futures]
    assert (good.metrics["think_format_reward/score"], bad.metrics["think_format_reward/score"]) == (1.0, 0.0)
    assert (good.metrics["keywords/score"], bad.metrics["keywords/score"]) == (3.0, 1.0)
    assert good.metrics["later/score"] == 0.5 and good.score == pytest.approx(1 + 3 + 0.5)
    assert good.metrics["ids_mean"] == 2.0 and good.info["first_role"] == "user"
    err = capfd.readouterr().err
    assert "[keywords] step 3 of 10" in err  # printed in the worker, prefixed with its name
    assert "[keywords] written below Python" in err and "[keywords] no newline at the end\n" in err


def test_plain_prompts_stay_strings_and_a_function_may_change_its_inputs():
    def popper(prompts, completions, **kw):
        seen = [isinstance(p, str) and isinstance(c, str) for p, c in zip(prompts, completions)]
        completions.pop()  # its own copy
        prompts.clear()
        return [float(s) for s in seen]  # 3 items for the 3 completions it was given

    with FunctionPool([popper]) as pool:
        rows = pool.score_batch(_requests("a", "b", "c"), {"messages": [None, None, None]})
    assert [r.score for r in rows] == [1.0, 1.0, 1.0]


def test_spans_follow_the_protocol_rules_on_this_path_too():
    def spans(completions, **kw):
        return [{"score": 2.5, "spans": [{"start": 0, "end": 2, "reward": 0.5}]},
                {"score": 0.5, "spans": [{"start": 0.6, "end": 2.7, "reward": 0.1}]},
                {"score": 0.5, "spans": [{"start": 0, "end": 1, "reward": 3.0}]},
                {"score": math.inf}]

    with FunctionPool([spans], weights=[2.0]) as pool:
        ok, floats, big, inf = pool.score_batch(_requests("abc", "abc", "abc", "abc"))
    assert ok.score == 5.0 and [(s.start, s.end, s.reward) for s in ok.spans] == [(0, 2, 1.0)]  # times its weight
    assert floats.error.type == "bad_result" and "offsets must be integers" in floats.error.message
    assert big.error.type == "bad_result" and "outside [-1.0, 1.0]" in big.error.message
    assert inf.error.type == "bad_result" and "finite" in inf.error.message


def test_a_function_past_its_memory_bound_fails_its_batch_and_the_next_is_scored():
    def hungry(completions, **kw):
        if completions[0] == "eat":
            block = bytearray(512 * 2**20)  # 512 MB, past the 64 MB bound
            return [float(len(block))]
        return [1.0]

    with FunctionPool([hungry], memory_mb=64) as pool:
        (failed,) = pool.score_batch(_requests("eat"))
        (fine,) = pool.score_batch(_requests("ok"))
    assert not failed.usable and "memory" in failed.error.message.lower()
    assert fine.ok and fine.score == 1.0


def test_a_raising_or_hanging_function_costs_its_batch_and_names_itself():
    def flaky(completions, **kw):
        if completions[0] == "boom":
            raise ValueError("the reward broke")
        if completions[0] == "hang":
            import time
            time.sleep(60)
        return [1.0] * len(completions)

    with FunctionPool([flaky]) as pool:
        (boom,) = pool.score_batch(_requests("boom"))
        (hang,) = pool.score_batch([ScoreRequest(id="h", completion="hang", deadline_ms=1500)])
        (fine,) = pool.score_batch(_requests("ok"))
        (via_submit,) = pool.score([{"id": 1, "completion": "ok"}])
    assert boom.error.type == "backend" and "flaky raised ValueError: the reward broke" in boom.error.message
    assert hang.status == "timeout" and "restarted" in hang.error.message
    assert fine.ok and via_submit.ok and pool.stats["restarts"] == 1


def test_a_forked_function_keeps_no_other_childs_input_open():
    """The caller's other children (reward services) see the end of their input when it closes
    theirs, though a function was forked while their pipes were open."""
    import subprocess

    cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        with FunctionPool([lambda completions, **kw: [1.0] * len(completions)]) as pool:
            cat.stdin.close()
            assert cat.wait(timeout=30) == 0  # it read to the end: no copy of its stdin left in the fork
            (row,) = pool.score_batch(_requests("x"))
        assert row.ok
    finally:
        cat.kill()


def test_reward_services_of_functions_are_one_function_pool_and_mixed_with_a_service_none_drops_only_it():
    import sys
    from pathlib import Path

    from botgrpo_cli.reward_client.opening import open_pool

    def some(completions, **kw):
        return [None if c == "skip" else 2.0 for c in completions]

    with open_pool("a", 1, None, {"a": {"function": some, "weight": 2.0}, "b": {"function": some}}) as pool:
        assert isinstance(pool, FunctionPool) and pool.names == ["a", "b"] and pool.weights == [2.0, 1.0]
        scored, skipped = pool.score_batch(_requests("x", "skip"))
    assert scored.score == 6.0 and skipped.error.type == "not_scorable"

    echo = [sys.executable, str(Path(__file__).resolve().parents[1] / "fixtures" / "echo_service.py")]
    with open_pool("echo", 1, None, {"echo": {"command": echo}, "some": {"function": some, "weight": 3.0}}) as pool:
        both, echo_only = pool.score([{"id": 1, "completion": "x"}, {"id": 2, "completion": "skip"}])
    assert both.ok and both.score == pytest.approx(0.5 + 3 * 2.0)
    assert echo_only.ok and echo_only.score == pytest.approx(0.5)  # the function's None leaves echo's score
