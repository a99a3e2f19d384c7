"""Multi-turn rollouts on the tiny arith_synth model whose warm start learned to call the calculator
(task option calculator=true): tools from the user's files, hanging and raising tools, an
environment class with spans on one turn, conversational prompts; the real math service scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from botgrpo_cli.config import load_config
from botgrpo_cli.rollout import FastEngine, HFEngine, SamplingParams
from botgrpo_cli.rollout.turns import MultiTurn, TurnSettings
from botgrpo_cli.trainer import train
from botgrpo_cli.turns.tools import Toolbox

SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=48", "run.threads=1",
         "optim.micro_batch_size=8", "log.tensorboard=false", "run.save_every=0", "run.steps=2"]
CALCULATOR = {"calculator": True}

USER_TOOLS = '''
import os, time

def calculator(expression: str) -> str:
    """Multiply two whole numbers written as "a * b".

    Args:
        expression: the product to compute
    """
    a, b = expression.split("*")
    return str(int(a) * int(b))

def flaky(expression: str) -> str:
    """The first call anywhere hangs; every later one raises.

    Args:
        expression: ignored
    """
    marker = os.path.join(os.path.dirname(__file__), "hung")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))  # atomic: one call of those side by side wins
    except FileExistsError:
        raise RuntimeError("the tool broke") from None
    time.sleep(600)
'''

USER_ENV = '''
class AskTwice:
    """Asks the model to check its answer once; rewards the last turn, and marks the first turn bad."""

    def reset(self, row):
        self.asked = False
        return row["prompt"]

    def step(self, transcript):
        if self.asked:
            return None
        self.asked = True
        return "Check your answer again, step by step."

    def reward(self, transcript):
        (first_start, first_end), (last_start, last_end) = transcript.turns[0], transcript.turns[-1]
        score = 1.0 if "\\\\boxed" in transcript.text[last_start:last_end] else -1.0
        return score, [(first_start, first_end, -0.5)]
'''

NAN_ENV = '''
import itertools

CALLS = itertools.count()  # next() is atomic: of the 8 rewards asked side by side, every other one is NaN


class HalfNaN:
    def reset(self, row):
        return row["prompt"]

    def step(self, transcript):
        return None

    def reward(self, transcript):
        return float("nan") if next(CALLS) % 2 else (1.0 if "\\\\boxed" in transcript.text else -1.0)
'''


@pytest.fixture(scope="module")
def model_dir(botgrpo_cache) -> Path:
    from botgrpo_cli.bootstrap import bootstrap
    from botgrpo_tasks import get_task

    return bootstrap(get_task("arith_synth", **CALCULATOR))


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory) -> Path:
    """A user's folder outside the package: tools, an environment, chat prompts."""
    from botgrpo_tasks import get_task

    home = tmp_path_factory.mktemp("user")
    (home / "my_tools.py").write_text(USER_TOOLS)
    (home / "my_env.py").write_text(USER_ENV)
    (home / "nan_env.py").write_text(NAN_ENV)
    rows = [{"prompt": [{"role": "user", "content": ex.prompt}], "answer": ex.reference["answer"]}
            for ex in get_task("arith_synth").train_examples()[:20]]
    (home / "chats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (home / "rewards.py").write_text("def answered(completions, **kw):\n"
                                     "    return [1.0 if '\\\\boxed' in c else 0.0 for c in completions]\n")
    return home


@pytest.fixture(scope="module")
def pool():
    from botgrpo_cli.reward_client import RewardPool

    with RewardPool("math", workers=1) as running:
        yield running


@pytest.fixture(scope="module")
def engines(model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    yield tok, {"fast": FastEngine(model, tok), "hf": HFEngine(model, tok)}
    torch.set_num_threads(threads)


def _cfg(model_dir: Path, out: Path, *extra: str, algo: str = "grpo"):
    cfg = load_config(None, algo=algo, sets=[*SMALL, "run.task=arith_synth", *extra])
    cfg.model.name_or_path, cfg.run.out_dir = str(model_dir), str(out)
    cfg.run.task_options = dict(CALCULATOR)
    return cfg


def test_the_warm_starts_base_rate_is_measured_calling_the_calculator(model_dir):
    from botgrpo_cli.bootstrap import read_info

    info = read_info(model_dir)
    assert info["measured_with_tools"] == ["calculator"] and info["base_success_rate"] > 0  # not 0: it calls first


def test_tool_turns_greedy_equal_on_both_engines_and_only_model_tokens_trained(engines):
    from botgrpo_tasks import get_task

    tok, by_name = engines
    task = get_task("arith_synth", **CALCULATOR)
    examples = task.train_examples()[:3]
    prompts = [task.format_prompt(ex, tok) for ex in examples]
    with Toolbox(["calculator"], workers=1) as tools:
        batches = {name: MultiTurn(engine, tok, TurnSettings(max_turns=3, tools=tools)).generate(
            prompts, 2, SamplingParams(max_new_tokens=48, temperature=0.0), rows=examples)
            for name, engine in by_name.items()}
    fast, hf = batches["fast"], batches["hf"]
    assert fast.texts == hf.texts and torch.equal(fast.completion_ids, hf.completion_ids)
    assert torch.equal(fast.loss_mask, hf.loss_mask) and fast.turns == hf.turns
    assert all(len(t) == 2 for t in fast.turns)  # the warm start calls the calculator, then answers
    for i, turns in enumerate(fast.turns):
        n = int(fast.mask[i].sum())
        in_turns = torch.zeros(n, dtype=torch.bool)
        for a, b in turns:
            in_turns[a:b] = True
        assert torch.equal(fast.loss_mask[i, :n], in_turns)  # trained == the model's turns, nothing else
        text, offsets = fast.texts[i], fast.offsets[i]
        if len(turns) == 2:
            gap = fast.completion_ids[i, turns[0][1]:turns[1][0]].tolist()
            assert tok.decode(gap) == "\n\n<tool_response>\n" + str(eval_product(text)) + "\n</tool_response>"
            start = text.index("<tool_response>")
            owner = next(t for t, (s, e) in enumerate(offsets) if s <= start < e)
            assert not fast.loss_mask[i, owner]  # the tool's answer is in transcript coordinates, untrained


def eval_product(text: str) -> int:
    """The product the transcript's call asked for (read back from the call's JSON, not evaluated)."""
    expression = json.loads(text[text.index("{"):text.index("</tool_call>")])["arguments"]["expression"]
    a, b = expression.split("*")
    return int(a) * int(b)


def test_a_users_tool_from_a_file_trains(model_dir, user_dir, pool, tmp_path, seen):
    result = train(_cfg(model_dir, tmp_path / "run", f"run.tools=[{user_dir}/my_tools.py:calculator]",
                        "run.eval_every=2", "run.eval_prompts=4", algo="bot_grpo"), pool=pool)
    assert [m["step"] for m in result.metrics] == [1, 2]
    for m in result.metrics:  # the warm start calls the calculator before it answers: a call and an answer
        assert m["turns/mean"] >= 2 and m["turns/tool_calls"] >= 8 and m["turns/tool_errors"] == 0
        assert m["turns/masked_tokens"] > 0 and m["turns/trained_tokens"] > 0
    assert result.metrics[-1]["eval/turns"] >= 2  # the held-out evaluation runs the turns too
    for batch, (mask, adv) in zip(seen["batches"], seen["advantages"]):
        assert torch.equal(mask, batch.trained) and bool((adv[~mask] == 0).all())
        for i, turns in enumerate(batch.turns):
            if len(turns) > 1:  # the tool's answer between the turns: in the trajectory, not trained
                (_, b0), (a1, _) = turns[0], turns[1]
                assert b0 < a1 and bool(batch.mask[i, b0:a1].all()) and not bool(mask[i, b0:a1].any())


def test_asynchronous_multi_turn_rollouts_keep_their_turns_and_the_bound(model_dir, user_dir, pool, tmp_path):
    """rollout.max_staleness=1: the producer runs the tool turns on the engine's own weight copy; each
    step reports its own batch's turns, and the held-out evaluation between steps takes the engine
    (with the current weights) from the producer and runs the turns too."""
    result = train(_cfg(model_dir, tmp_path / "run", f"run.tools=[{user_dir}/my_tools.py:calculator]",
                        "rollout.max_staleness=1", "run.steps=3", "run.eval_every=2", "run.eval_prompts=4"),
                   pool=pool)
    assert [m["step"] for m in result.metrics] == [1, 2, 3]
    for m in result.metrics:
        assert 0 <= m["async/staleness"] <= 1
        assert m["turns/mean"] >= 2 and m["turns/tool_calls"] >= 8 and m["turns/tool_errors"] == 0
    assert result.metrics[1]["eval/turns"] >= 2


def test_eval_reports_turns_and_tool_calls_and_keeps_transcripts(model_dir, tmp_path):
    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--task", "arith_synth", "--task-option", "calculator=true", "--model",
                                      str(model_dir), "--out", str(out), "--n", "2", "--limit", "4", "--tool",
                                      "calculator", "--max-turns", "2", "--max-new-tokens", "48", "--threads", "1"])
    assert result.exit_code == 0, result.output
    figures = json.loads((out / "eval.json").read_text())["evaluations"][0]["aggregates"]
    assert figures["turns_mean"] > 1.0 and figures["tool_calls_mean"] > 0 and figures["tool_calls_valid"] == 1.0
    assert "model turns (mean)" in (out / "eval.md").read_text()
    lines = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert any("<tool_response>" in line["completion"] for line in lines)  # scored as whole transcripts


def test_a_hanging_and_a_raising_tool_are_counted_and_the_run_finishes(model_dir, user_dir, pool, tmp_path):
    tool = user_dir / "flaky_tools.py"
    tool.write_text(USER_TOOLS.replace("def calculator(", "def exact(").replace("def flaky(", "def calculator("))
    result = train(_cfg(model_dir, tmp_path / "run", f"run.tools=[{tool}:calculator]",
                        "rollout.tool_deadline_s=2"), pool=pool)
    assert [m["step"] for m in result.metrics] == [1, 2]
    calls = sum(m["turns/tool_calls"] for m in result.metrics)
    assert sum(m["turns/tool_timeouts"] for m in result.metrics) == 1  # the hang, cut at the deadline
    assert sum(m["turns/tool_errors"] for m in result.metrics) == calls >= 2  # every other call raised


def test_an_environment_trains_and_its_span_reaches_only_its_turn(model_dir, user_dir, pool, tmp_path, seen):
    result = train(_cfg(model_dir, tmp_path / "run", f"run.environment={user_dir}/my_env.py:AskTwice",
                        "rollout.max_turns=2", algo="bot_grpo"), pool=pool)
    assert [m["step"] for m in result.metrics] == [1, 2]
    for m in result.metrics:
        assert m["turns/mean"] >= 2 and m["turns/masked_tokens"] > 0 and m["reward/masked"] == 0
    page = (result.run_dir / "samples.html").read_text()
    assert page.count('<span class="m"') > 0 and "2 model turns" in page  # the environment's words, untinted
    compared = 0
    for batch, (mask, adv) in zip(seen["batches"], seen["advantages"]):
        assert torch.equal(mask, batch.trained)  # the environment's tokens are not trained
        assert bool((adv[~mask] == 0).all()) and bool((~mask & batch.mask).any())
        for i, ((a0, b0), (a1, b1)) in enumerate(batch.turns):
            chars = torch.tensor([e > s for s, e in batch.offsets[i]])  # an end token has none: no span reaches it
            first, last = adv[i, a0:b0][chars[a0:b0]], adv[i, a1:b1][chars[a1:b1]]
            assert torch.allclose(first, first[0]) and torch.allclose(last, last[0])
            if bool(last[0] != 0):  # a degenerate group gives 0 everywhere
                assert float(first[0]) < float(last[0])  # the span's -0.5 lands on the first turn only
                compared += 1
    assert compared > 0  # some group was not degenerate: the comparison above ran


ASKED = "Check your answer again, step by step."  # AskTwice's message


def _product_asked(turn: str) -> int | None:
    """The product a model turn's calculator call asked for; None where the sampled call is malformed."""
    try:
        return eval_product(turn)
    except (ValueError, KeyError, TypeError):
        return None


TURNS, PER_TURN = 3, 48  # rollout.max_turns, rollout.max_new_tokens: at most 144 trained tokens a trajectory


@pytest.mark.parametrize("algo", ["dapo", "dr_grpo"])
def test_conversational_prompts_with_a_tool_and_an_environment(model_dir, user_dir, tmp_path, seen, scoring,
                                                               algo):
    """Chat rows, the calculator and AskTwice in one run (one step). The model saw its chat row, the
    tool's right answer after each call and the environment's question; only its own turns are
    trained. DAPO's overlong shaping and Dr. GRPO's normaliser count those trained tokens, by hand
    from the turns, against max_new_tokens x max_turns (overlong_cache = 144: the penalty is -n/144
    for n trained tokens, so any other count or limit shows); the advantages start from those scores."""
    from transformers import AutoTokenizer

    limit = TURNS * PER_TURN
    chats = ["run.task=prompts", f"reward.function={user_dir}/rewards.py:answered", "run.tools=[calculator]",
             f"run.environment={user_dir}/my_env.py:AskTwice", f"rollout.max_turns={TURNS}", "run.steps=1",
             f"rollout.max_new_tokens={PER_TURN}", "algo.overlong_shaping=true", f"algo.overlong_cache={limit}"]
    cfg = load_config(None, algo=algo, sets=[*SMALL, *chats])
    cfg.model.name_or_path, cfg.run.out_dir = str(model_dir), str(tmp_path / "run")
    cfg.run.task_options = {"path": str(user_dir / "chats.jsonl")}
    (m,) = train(cfg).metrics
    assert m["turns/mean"] >= 2 and m["turns/tool_calls"] > 0 and m["turns/env_errors"] == 0
    tok = AutoTokenizer.from_pretrained(model_dir)
    batch, (raw, ok, shaped), (mask, adv) = seen["batches"][-1], scoring["scores"][-1], seen["advantages"][-1]
    users = [json.loads(line)["prompt"][0]["content"] for line in (user_dir / "chats.jsonl").read_text().splitlines()]
    called = asked = 0
    for i, turns in enumerate(batch.turns):
        assert any(batch.prompts[i].startswith(u) for u in users)  # its chat row (no template: plain paragraphs)
        for (begin, end), (start, _) in zip(turns, turns[1:]):  # what came between two model turns
            between = tok.decode(batch.completion_ids[i, end:start].tolist())
            if "<tool_response>" in between:
                product = _product_asked(tok.decode(batch.completion_ids[i, begin:end].tolist()))
                called += product is not None
                assert product is None or f"<tool_response>\n{product}\n</tool_response>" in between
            else:
                asked += 1
                assert ASKED in between
    assert called > 0 and asked > 0
    trained = torch.zeros_like(batch.mask)
    for i, turns in enumerate(batch.turns):
        for a, b in turns:
            trained[i, a:b] = True  # the model's own tokens, by hand from its turns
    assert torch.equal(batch.trained, trained) and torch.equal(mask, trained & ok[:, None])
    assert bool((adv[~mask] == 0).all())
    counts = trained.sum(1).float()
    assert bool((counts < batch.mask.sum(1)).all())  # every trajectory holds tool or environment tokens
    torch.testing.assert_close(shaped, torch.where(ok, raw - counts / limit, 0.0))
    assert torch.equal(scoring["advantage_scores"][-1], shaped)  # the advantages start from the shaped scores
    if algo == "dr_grpo":  # A = s - its group's mean on each trained token; loss = -sum A / (B x 144) on policy
        for g in batch.group_ids.unique():
            rows = (batch.group_ids == g) & ok
            for i in rows.nonzero().flatten().tolist():
                want = shaped[i] - shaped[rows].mean()
                torch.testing.assert_close(adv[i][mask[i]], want.expand(int(mask[i].sum())), atol=1e-6, rtol=1e-5)
        assert m["loss"] == pytest.approx(-float((adv * mask).sum()) / (len(counts) * limit), rel=1e-4, abs=1e-7)
        assert abs(m["loss"]) > 1e-4  # the lengths made the shaped scores differ inside the groups


AIME_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "aime_sample.jsonl"
ARITH_TEMPLATE = "{problem}\nSolve step by step, one equation per paragraph.\n"  # the warm start's own prompt


def test_aime_with_the_built_in_calculator_trains_and_evaluates(model_dir, pool, tmp_path, seen):
    """The aime task (a user's table of problems with answers) and run.tools=[calculator]: the word
    problems the warm start knows, through aime's own loading and math scoring, call the calculator."""
    from botgrpo_tasks import get_task

    table = tmp_path / "problems.jsonl"
    rows = [{"problem": ex.prompt.split("\nSolve")[0], "answer": ex.reference["answer"]}
            for ex in get_task("arith_synth").train_examples()[:30]]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = load_config(None, algo="bot_grpo", sets=[*SMALL, "run.task=aime", "run.tools=[calculator]", "run.steps=1",
                                                   "run.eval_every=1", "run.eval_prompts=4"])
    cfg.model.name_or_path, cfg.run.out_dir = str(model_dir), str(tmp_path / "run")
    cfg.run.task_options = {"path": str(table), "prompt_template": ARITH_TEMPLATE}
    result = train(cfg, pool=pool)
    (m,) = result.metrics
    assert m["turns/mean"] >= 2 and m["turns/tool_calls"] >= 8 and m["turns/tool_errors"] == 0
    assert m["eval/turns"] >= 2 and m["eval/failed_scoring"] == 0
    (batch,) = seen["batches"]
    for text in batch.texts:  # the built-in's answer is the product the call asked for
        assert text.split("<tool_response>\n")[1].split("\n")[0] == str(eval_product(text))


def test_aime_problems_evaluate_with_the_calculator(model_dir, tmp_path):
    """Real competition problems (far outside what the tiny model learned): the evaluation runs the
    turns, scores every transcript and reports the tool figures even where the model calls nothing."""
    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--task", "aime", "--task-option", f"path={AIME_SAMPLE}", "--task-option",
                                      f"eval_path={AIME_SAMPLE}", "--model", str(model_dir), "--out", str(out), "--n",
                                      "2", "--limit", "4", "--tool", "calculator", "--max-turns", "2",
                                      "--max-new-tokens", "32", "--threads", "1"])
    assert result.exit_code == 0, result.output
    figures = json.loads((out / "eval.json").read_text())["evaluations"][0]["aggregates"]
    assert figures["samples"] == 8 and figures["failed_scoring"] == 0
    assert 1.0 <= figures["turns_mean"] <= 2.0 and figures["tool_calls_mean"] >= 0
    assert "tool calls per sample" in (out / "eval.md").read_text()


def test_a_nan_reward_from_an_environment_is_masked_counted_and_never_saved(model_dir, user_dir, pool, tmp_path):
    """Issue 50: 4 of 8 rewards NaN; the run trains on the other 4 and saves finite weights."""
    from botgrpo_cli.trainer import checkpoint

    result = train(_cfg(model_dir, tmp_path / "run", f"run.environment={user_dir}/nan_env.py:HalfNaN",
                        "rollout.max_turns=1", "run.steps=1"), pool=pool)
    (m,) = result.metrics
    assert m["reward/masked"] == 4 and m["update/nonfinite_skipped"] == 0
    assert all(m[k] is not None for k in ("reward/mean", "loss", "grad_norm")), m  # null in the JSON when NaN
    assert checkpoint.read(checkpoint.latest(result.run_dir)).state.step == 1  # its weights are finite


BIG_TOOLS = '''
def calculator(expression: str) -> str:
    """Answers far more than any context holds.

    Args:
        expression: ignored
    """
    return "7" * 1_000_000


def hungry(size_gib: int) -> str:
    """Asks for address space it never touches (numpy.empty), the way a leaking tool grows.

    Args:
        size_gib: how much
    """
    import numpy
    numpy.empty(size_gib * 2**30, dtype=numpy.uint8)
    return "allocated"
'''


class Flood:
    """An environment whose answer after the first turn is a 1 MB string."""

    def reset(self, row):
        return row["prompt"]

    def step(self, transcript):
        return "x" * 1_000_000


def test_a_message_past_max_message_chars_never_enters_the_transcript(engines, tmp_path):
    """Issue 50: a tool's huge result becomes an error for the model (its worker does not send it);
    an environment's ends its trajectory as a failed scoring; both counted, and the batch stays the
    size of its turns."""
    from botgrpo_tasks import get_task

    tok, by_name = engines
    (tmp_path / "big_tools.py").write_text(BIG_TOOLS)
    task = get_task("arith_synth", **CALCULATOR)
    examples = task.train_examples()[:2]
    prompts = [task.format_prompt(ex, tok) for ex in examples]
    params = SamplingParams(max_new_tokens=48, temperature=0.0)
    with Toolbox([f"{tmp_path}/big_tools.py:calculator"], workers=1, max_chars=1000) as tools:
        turns = MultiTurn(by_name["fast"], tok, TurnSettings(max_turns=2, tools=tools))
        batch = turns.generate(prompts, 1, params, rows=examples)
    stats = turns.take_stats()
    assert stats["turns/tool_calls"] == stats["turns/oversized_messages"] == stats["turns/tool_errors"] == 2
    assert all("more than the 1000 a message may hold (rollout.max_message_chars)" in t for t in batch.texts)
    assert batch.completion_ids.shape[1] < 300  # no megabyte of tokens in the batch
    turns = MultiTurn(by_name["fast"], tok, TurnSettings(max_turns=2, environment=Flood, max_message_chars=1000))
    batch = turns.generate(prompts, 1, params, rows=examples)
    stats = turns.take_stats()
    assert stats["turns/env_errors"] == stats["turns/oversized_messages"] == 2 and batch.completion_ids.shape[1] < 300
    assert all(not r.usable and "max_message_chars" in r.error.message for r in turns.scores.values())


def test_a_tool_past_its_memory_bound_is_an_error_and_its_worker_goes_on(tmp_path):
    """Issue 50: tools get the reward functions' RLIMIT_AS bound (rollout.tool_memory_mb)."""
    from botgrpo_cli.turns.tool_calls import ToolCall

    (tmp_path / "big_tools.py").write_text(BIG_TOOLS)
    with Toolbox([f"{tmp_path}/big_tools.py:hungry"], workers=1, memory_mb=256) as tools:
        over, under = tools.run([ToolCall("hungry", {"size_gib": 1}), ToolCall("hungry", {"size_gib": 0})])
    assert over.error == "error" and "memory bound (rollout.tool_memory_mb)" in over.content
    assert under.error is None and under.content == "allocated" and tools.stats["restarts"] == 0


def test_tools_given_as_functions_run_in_forked_workers_answered_as_spec_tools_are():
    """Trainer(tools=[fn]) with a function that cannot be imported by name (a script's, a closure):
    the workers are forks that inherit it; a raise, a hang past the deadline (the worker replaced by
    a new fork) and a result past max_chars answer the model as a worker started from a spec does;
    an async tool is awaited."""
    import os
    import threading

    from botgrpo_cli.turns.tool_calls import ToolCall

    never = threading.Event()

    def where(kind: str) -> str:
        """Where the call ran, or fails as asked.

        Args:
            kind: pid, raise, hang or big
        """
        if kind == "raise":
            raise ValueError("asked to")
        if kind == "hang":
            never.wait()
        return "7" * 2000 if kind == "big" else str(os.getpid())

    async def later(n: int) -> int:
        """An async tool, as TRL allows: its awaited result is the answer.

        Args:
            n: a number
        """
        return n + 1

    with Toolbox([where, later], workers=1, deadline_s=1.0, max_chars=1000) as tools:
        assert [s["function"]["name"] for s in tools.schemas] == ["where", "later"]
        first, raised, hung, after, big, awaited = tools.run(
            [*(ToolCall("where", {"kind": k}) for k in ("pid", "raise", "hang", "pid", "big")), ToolCall("later", {"n": 1})])
    assert first.error is None and int(first.content) != os.getpid()  # another process: a fork
    assert raised.error == "error" and raised.content.startswith("Error: ValueError: asked to (")
    assert (hung.error, hung.content) == ("timeout", "Error: the tool where did not answer within 1 s")
    assert after.error is None and int(after.content) != os.getpid() and tools.stats["restarts"] == 1  # a new fork
    assert big.error == "oversized" and "more than the 1000 a message may hold" in big.content
    assert (awaited.error, awaited.content) == (None, "2")
