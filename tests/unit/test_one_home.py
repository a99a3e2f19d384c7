"""Rules that used to be written twice, now in one place: the former callers agree."""

from __future__ import annotations

from typing import Annotated

import torch

from botgrpo_cli.algos import compute_advantages, zero_variance_groups
from botgrpo_cli.algos.options import FromTrainer


def _near_constant_batch(seed: int):
    """Groups of 1-4 scores; some groups equal up to float32 rounding (0.1 + 0.2 vs 0.3 and the like)."""
    gen = torch.Generator().manual_seed(seed)
    rows, ids = [], []
    for k in range(8):
        n = int(torch.randint(1, 5, (1,), generator=gen))
        kind = k % 3
        base = float(torch.rand(1, generator=gen))
        if kind == 0:  # bit-equal
            vals = [base] * n
        elif kind == 1:  # equal up to rounding
            vals = [torch.tensor(base, dtype=torch.float32).item() * (1 + 1e-7 * j) for j in range(n)]
        else:
            vals = torch.rand(n, generator=gen).tolist()
        rows += vals
        ids += [10 * k + 1] * n
    return torch.tensor(rows), torch.tensor(ids)


def test_dynamic_sampling_drops_exactly_the_groups_the_estimators_zero():
    """algos/dapo.zero_variance_groups (dynamic sampling, the logged share) and the estimators' own
    degenerate-group test are one rule (masked.degenerate_groups)."""
    for seed in range(20):
        s, g = _near_constant_batch(seed)
        mask = torch.ones(len(s), 3, dtype=torch.bool)
        dropped = zero_variance_groups(s, g)
        for name in ("grpo", "rloo", "bot_grpo"):
            adv = compute_advantages(name, token_rewards=s[:, None].expand(-1, 3), scores=s, mask=mask, group_ids=g)
            assert bool((adv[dropped] == 0).all()), (name, seed)
        grpo = compute_advantages("grpo", token_rewards=s[:, None].expand(-1, 3), scores=s, mask=mask, group_ids=g)
        assert torch.equal((grpo == 0).all(1), dropped), seed  # and every other group learns something


def test_training_and_evaluation_count_success_alike():
    """trainer/reports.batch_success_rate (the logged `success`) and evaluation's Sample.success use
    algos.metrics.succeeded: with fractional success metrics the mean of the metric would differ."""
    from concurrent.futures import Future

    from botgrpo_cli.evaluation.sampling import Pending, _sample
    from botgrpo_cli.reward_client.scored import Scored
    from botgrpo_cli.trainer.reports import batch_success_rate
    from botgrpo_rewards.protocol import ScoreResponse

    responses = [ScoreResponse(id=i, status="ok", score=v, metrics={"spec_pass": v})
                 for i, v in enumerate([0.2, 0.5, 0.75, 0.4, 1.0])]
    responses.append(ScoreResponse(id=9, status="timeout"))  # a failed scoring is a failure in both
    samples = []
    for resp in responses:
        done = Future()
        done.set_result(resp)
        samples.append(_sample(Pending(0, "x", 1, True, done, None, None), "spec_pass", None))
    assert batch_success_rate(Scored(responses), "spec_pass") == sum(s.success for s in samples) / len(samples) == 0.5


def test_one_scoring_deadline_default():
    """Training (reward.deadline_ms), evaluation and the integrations default to the protocol's deadline."""
    import dataclasses
    import inspect

    from botgrpo_cli.config import RewardConfig
    from botgrpo_cli.evaluation.sampling import Scoring
    from botgrpo_cli.integrations.service import ServiceScorer
    from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS

    def default(cls, name="deadline_ms"):
        return {f.name: f.default for f in dataclasses.fields(cls)}[name]

    assert default(RewardConfig) == default(Scoring) == DEFAULT_DEADLINE_MS
    assert inspect.signature(Scoring.of_task).parameters["deadline_ms"].default == DEFAULT_DEADLINE_MS
    assert inspect.signature(ServiceScorer).parameters["deadline_ms"].default == DEFAULT_DEADLINE_MS


def test_seed_mixing_is_one_rule_and_unchanged():
    """trainer/rollouts (step, prompt and epoch seeds) and rollout/vllm (row seeds: run seed, prompt,
    row, by key_seed) mix through rollout/seeds.mix_seed; the held-out seed is seeds.held_out_seed."""
    import hashlib
    import random

    from botgrpo_cli.rollout.seeds import held_out_seed, text_digest
    from botgrpo_cli.rollout.vllm import row_seed
    from botgrpo_cli.rollout.seeds import generation_seed, prompt_seed
    from botgrpo_cli.trainer.rollouts import PromptStream

    digest = int.from_bytes(hashlib.blake2b(b"What is 2+2?", digest_size=8).digest(), "little")
    assert text_digest("What is 2+2?") == digest
    for seed in (0, 7, 2**40):
        assert generation_seed(seed, 12, 2) == (seed * 1_000_003 + 12 * 1009 + 2) % 2**63
        assert prompt_seed(seed, "What is 2+2?") == (seed * 1_000_003 + digest) % 2**63
        ids_digest = text_digest("12,345,6")  # a row's prompt token ids, written out
        assert row_seed(seed, [12, 345, 6], 3) == ((seed * 1_000_003 + ids_digest) % 2**63 * 1_000_003 + 3) % 2**63 % (2**31 - 1)
        assert held_out_seed(seed) == seed + 7919  # unchanged: evaluations keep their draws
        order = list(range(10))
        random.Random(seed * 1_000_003 + 1).shuffle(order)
        stream = PromptStream(list(range(10)), seed, position=10)
        assert stream.take(10) == order  # the second epoch's shuffle


def test_vllm_options_come_from_the_config():
    """rollout/vllm.VLLMOptions has no defaults of its own: the config's rollout.vllm_* fields."""
    import dataclasses

    from botgrpo_cli.config import RolloutConfig
    from botgrpo_cli.rollout.vllm import VLLMOptions

    plain = VLLMOptions()
    assert VLLMOptions.from_config(RolloutConfig(), "auto") == plain
    for f in dataclasses.fields(VLLMOptions):
        if f.name != "dtype":
            assert getattr(plain, f.name) == getattr(RolloutConfig(), f"vllm_{f.name}"), f.name
    custom = RolloutConfig(vllm_gpu_memory_utilization=0.5, vllm_dtype=None, vllm_enforce_eager=True)
    assert VLLMOptions.from_config(custom, "bfloat16") == dataclasses.replace(
        plain, gpu_memory_utilization=0.5, dtype="bfloat16", enforce_eager=True)


def test_a_failed_row_gets_its_own_group_in_both_trainers():
    """The trainer (trainer/rollouts, trainer/loop) and BoTGRPOTrainer (integrations/trl) both call
    algos.isolate_failed; a failed row then gets advantage 0 and leaves its siblings' baseline alone."""
    import inspect

    import pytest

    pytest.importorskip("trl")
    from botgrpo_cli.algos import isolate_failed
    from botgrpo_cli.integrations import trl
    from botgrpo_cli.trainer import rollouts

    assert rollouts.isolate_failed is isolate_failed and "isolate_failed(" in inspect.getsource(trl)
    g, ok = torch.tensor([0, 0, 0, 1, 1]), torch.tensor([True, True, False, True, True])
    s = torch.tensor([1.0, 0.0, 5.0, 1.0, 0.0])
    iso = isolate_failed(g, ok)
    assert len(set(iso.tolist())) == 3 and iso[2] not in (0, 1)
    adv = compute_advantages("grpo", token_rewards=s[:, None], scores=s, mask=torch.ones(5, 1, dtype=torch.bool),
                             group_ids=iso)
    assert adv[2, 0] == 0 and torch.allclose(adv[:2], adv[3:])  # the failed row's 5.0 moved no baseline


def test_progress_bars_are_built_in_one_place():
    """Every progress bar comes from console.progress_bar (trainer, eval, bootstrap, reward score/render)."""
    from pathlib import Path

    import botgrpo_cli
    from botgrpo_cli.console import progress_bar

    root = Path(botgrpo_cli.__file__).parent
    builders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "Progress(" in p.read_text())
    assert builders == ["console.py"], builders
    bar = progress_bar("[bold]train", after="{task.fields[stats]}", disable=True)
    with bar:
        task = bar.add_task("x", total=3, stats="ok")
        bar.advance(task, 2)
    assert bar.tasks[0].completed == 2 and len(bar.columns) == 5


def test_a_lora_adapter_loads_the_same_for_resuming_and_for_evaluation(tmp_path):
    """trainer/policy (resume) and evaluation/models (eval) load a saved adapter through
    models/loading.load_adapter: the same weights, trainable for one and frozen for the other."""
    from peft import LoraConfig, get_peft_model

    from botgrpo_cli.bootstrap import bootstrap
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.evaluation.models import Target, load
    from botgrpo_cli.models.loading import load_pretrained, load_tokenizer
    from botgrpo_cli.trainer.policy import load_model

    base = str(bootstrap("arith_synth"))  # cached tiny model
    lora = get_peft_model(load_pretrained(base, "float32"), LoraConfig(r=2, lora_alpha=4, task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_()  # a trained adapter: not the identity
    lora.save_pretrained(tmp_path)
    load_tokenizer(base).save_pretrained(tmp_path)  # a checkpoint's model/ folder holds both
    resumed = load_model(base, ModelConfig(lora_r=2, lora_alpha=4), adapter=str(tmp_path))
    evaluated, _ = load(Target("model", str(tmp_path)))
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        torch.testing.assert_close(resumed(ids).logits, evaluated(ids).logits)
        assert not torch.allclose(load_pretrained(base, "float32")(ids).logits, evaluated(ids).logits)
    assert any(p.requires_grad for p in resumed.parameters()) and not any(p.requires_grad for p in evaluated.parameters())


def test_tasks_and_services_register_in_one_line_each(tmp_path, monkeypatch):
    """Built-ins are one line in tasks/__init__.py's _BUILTIN or rewards/registry.py's BUILTIN (pyproject no
    longer repeats them); another package adds one line to its entry points, found without editing
    botgrpo, and cannot shadow a built-in."""
    import importlib
    import sys
    import tomllib
    from pathlib import Path

    import botgrpo_tasks
    from botgrpo_rewards import registry

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert not pyproject["project"].get("entry-points", {}).get("botgrpo.tasks")  # built-ins live in code
    dist = tmp_path / "botgrpo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: botgrpo-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[botgrpo.tasks]\nplugin_task = botgrpo_tasks.arith_synth:make_task\n"
                                           "react_synth = nowhere:make_task\n\n[botgrpo.rewards]\n"
                                           "plugin_service = botgrpo_rewards.math.service:MathBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    botgrpo_tasks.TASKS.forget()  # a plugin installed while this process runs
    try:
        assert {"plugin_task", "react_synth", "arith_synth"} <= set(botgrpo_tasks.list_tasks())
        assert botgrpo_tasks.get_task("plugin_task").name == "arith_synth"
        assert botgrpo_tasks.get_task("react_synth").name == "react_synth"  # the built-in wins
        services = registry._Services()  # a fresh lookup (the module's own caches its scan)
        assert services["plugin_service"] == "botgrpo_rewards.math.service:MathBackend"
        assert services["math"] == "botgrpo_rewards.math.service:MathBackend"
    finally:
        monkeypatch.undo()
        importlib.invalidate_caches()
        botgrpo_tasks.TASKS.forget()
    assert "plugin_service" not in registry._Services() and "plugin_task" not in sys.modules
    assert "plugin_task" not in botgrpo_tasks.list_tasks()


def test_eval_flags_take_help_and_defaults_from_the_config():
    """`botgrpo eval` flags that mirror config fields show the field's help (cli/evaluate.MIRRORS);
    every flag that sets a config field (cli/evaluate.SETS) defaults as that field does."""
    import typer
    from typer.testing import CliRunner

    from botgrpo_cli.cli import app
    from botgrpo_cli.cli.evaluate import MIRRORS, SETS
    from botgrpo_cli.cli.options import config_help
    from botgrpo_cli.config import Config

    params = {p.name: p for p in typer.main.get_command(app).commands["eval"].params}
    cfg = Config()
    for flag, dotted in SETS.items():
        section, key = dotted.split(".")
        default, field = params[flag].default, getattr(getattr(cfg, section), key)
        if not params[flag].required:  # --task
            assert default == field or (default is None and field in ([], {})), flag  # repeatable flags: none given
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "1000"})
    shown = " ".join(result.output.replace("│", " ").split())
    for dotted in MIRRORS.values():
        assert " ".join(config_help(dotted).split()) in shown, dotted


def _sources(*packages: str):
    """(path, text) of every Python file of the named project packages."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root), path.read_text(encoding="utf-8")


def test_one_success_threshold(monkeypatch):
    """algos.metrics.SUCCESS_AT decides success, a render pass and a contact sheet's 'rendered' alike."""
    import re

    from botgrpo_cli.algos import metrics
    from botgrpo_cli.evaluation import pairwise, sheets
    from botgrpo_cli.evaluation.results import Problem, Sample

    written = [str(path) for path, text in _sources("botgrpo_cli", "tasks") if re.search(r">=\s*0\.5\b", text)]
    assert written == []
    sample = Sample(text="x", status="ok", score=1.0, success=True, metrics={"rendered": 0.6, "ok": 0.6})
    problem = Problem(id="p", prompt="q", samples=[sample])
    assert pairwise._rendered(sample) and sheets.rows([problem])[0]["rendered"] and metrics.succeeded(sample.metrics, "ok")
    monkeypatch.setattr(metrics, "SUCCESS_AT", 0.8)  # one constant moves all three
    assert not pairwise._rendered(sample) and not sheets.rows([problem])[0]["rendered"]
    assert not metrics.succeeded(sample.metrics, "ok")


def test_span_noise_seeds_follow_the_seed_rule():
    from botgrpo_cli.reward_client import span_noise
    from botgrpo_cli.rollout.seeds import mix_seed

    assert span_noise.noise_seed(3, 5, 1, 2) == mix_seed(mix_seed(mix_seed(3, 5), 1), 2)
    assert "hashlib" not in open(span_noise.__file__).read()


def test_option_choices_are_checked_by_the_signatures_alone():
    """Every registered estimator and loss refuses a bad declared option on a direct call too
    (the registry wraps it); no function checks its own choices, and losses take the helper from
    algos/options.py, not from advantages."""
    import ast

    import pytest
    import torch

    from botgrpo_cli.algos import ADVANTAGES, LOSSES
    from botgrpo_cli.algos.options import OneOf, OptionError, rules

    x, mask, ids = torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool), torch.tensor([0, 0])
    for registry, args in ((ADVANTAGES, (x, torch.zeros(2), mask, ids)), (LOSSES, (x, x, x, mask))):
        for name in registry.names():
            for option, (_, rule) in rules(registry[name]).items():
                if isinstance(rule, OneOf):
                    with pytest.raises(OptionError, match=f"{option}='nonsense' is not valid for"):
                        registry[name](*args, **{option: "nonsense"})
    calls = {}
    for path, text in _sources("botgrpo_cli/algos"):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                called = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                if "check_choice" in called:
                    calls.setdefault(str(path), []).append(node.name)
            if isinstance(node, ast.ImportFrom) and path.name == "losses.py":
                assert node.module != "botgrpo_cli.algos.advantages"
    # only plain arguments that are no declared option: a reward transform, a mismatch mode, a loss aggregation
    assert calls == {"botgrpo_cli/algos/advantages.py": ["apply_reward_return"],
                     "botgrpo_cli/algos/losses.py": ["mismatch_weights", "aggregate"]}


def test_the_default_learning_rate_rule_has_one_home():
    import dataclasses

    from botgrpo_cli import learning_rate
    from botgrpo_cli.config import OptimConfig
    from botgrpo_cli.trainer import defaults

    assert defaults.default_lr is learning_rate.default_lr
    lr_help = {f.name: f for f in dataclasses.fields(OptimConfig)}["lr"].metadata
    assert learning_rate.RULE in str(lr_help)
    assert learning_rate.default_lr(134_515_008, bootstrapped=False, lora=True) == learning_rate.PRETRAINED * 10


def test_evaluation_names_no_service_and_opens_a_real_reward_config():
    """Which service renders is the task's `render_service`; eval builds a RewardConfig, so the reward
    opener reads its fields without getattr."""
    import ast

    from botgrpo_rewards.registry import BUILTIN
    from botgrpo_tasks import get_task

    for path, text in _sources("botgrpo_cli/evaluation"):
        names = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant) and n.value in BUILTIN}
        assert not names, (str(path), names)
        assert "SimpleNamespace" not in text
    opening = next(text for path, text in _sources("botgrpo_cli/reward_client") if path.name == "opening.py")
    assert "getattr(reward" not in opening
    assert get_task("react_synth").render_service == get_task("react").render_service == "render"
    assert get_task("arith_synth").render_service is None


def test_one_plugin_rule_for_every_registry():
    """Tasks, reward services, estimators and losses look plugins up through one helper
    (botgrpo_base/plugins.py); nothing else reads entry points."""
    from botgrpo_cli.algos import ADVANTAGES, LOSSES
    from botgrpo_rewards import registry
    from botgrpo_rewards.protocol import Plugins
    from botgrpo_tasks import TASKS

    assert all(isinstance(p, Plugins) for p in (TASKS, registry.SERVICES._plugins, ADVANTAGES._plugins, LOSSES._plugins))
    readers = [str(path) for path, text in _sources("botgrpo_base", "botgrpo_cli", "rewards", "tasks")
               if "entry_points(" in text]
    assert readers == ["botgrpo_base/plugins.py"]


def test_the_trainer_fills_what_an_estimator_declares_from_the_trainer():
    """trainer/loop.estimator_options reads an estimator's FromTrainer() annotations, not its name."""
    from types import SimpleNamespace

    import pytest

    from botgrpo_cli.algos import ADVANTAGES
    from botgrpo_cli.config import AlgoConfig
    from botgrpo_cli.errors import UserError
    from botgrpo_cli.trainer.loop import estimator_options

    rho = torch.ones(2, 3)
    batch = SimpleNamespace(texts=["a\n\nb", "c"], offsets=[[(0, 1), (1, 3), (3, 4)], [(0, 1)]])
    ADVANTAGES.register("_wants_rho")(wants_rho)
    ADVANTAGES.register("_wants_halo")(wants_halo)
    try:
        options = estimator_options(AlgoConfig(advantage="_wants_rho", advantage_options={}), batch, rho, None, 0.5)
        assert set(options) == {"process_rewards"} and torch.equal(options["process_rewards"], 0.5 * rho)
        assert estimator_options(AlgoConfig(advantage="grpo", advantage_options={"scale": "batch"}), batch, rho,
                                 None, 0.5) == {"scale": "batch"}
        assert set(estimator_options(AlgoConfig(advantage="pure"), batch, rho, "\n\n", 1.0)) == {
            "step_ends", "process_rewards"}
        with pytest.raises(UserError, match="asks the trainer for 'halo'"):
            estimator_options(AlgoConfig(advantage="_wants_halo"), batch, rho, None, 1.0)
    finally:
        for name in ("_wants_rho", "_wants_halo"):
            ADVANTAGES._plugins.builtin.pop(name)


def wants_rho(token_rewards, scores, mask, group_ids, *, process_rewards: Annotated[object, FromTrainer()] = None):
    return token_rewards


def wants_halo(token_rewards, scores, mask, group_ids, *, halo: Annotated[object, FromTrainer()] = None):
    return token_rewards


def test_score_shaping_and_the_token_math_have_one_home():
    """Scores are shaped and zeroed on failed rows by algos.spans.shaped_scores, for dynamic sampling's
    choice and for the token rewards alike; the reward client only converts answers to tensors."""
    from botgrpo_cli.algos.spans import shaped_scores
    from botgrpo_cli.reward_client.scored import Scored, to_token_rewards
    from botgrpo_rewards.protocol import ScoreResponse

    scored = Scored([ScoreResponse(id=0, status="ok", score=0.5), ScoreResponse(id=1, status="timeout"),
                     ScoreResponse(id=2, status="ok", score=-1.0)])
    shaping = torch.tensor([-0.25, -0.5, 0.0])
    tr = to_token_rewards(scored, [[(0, 1)], [(0, 1)], [(0, 1), (1, 2)]], shaping=shaping)
    assert torch.equal(tr.scores, shaped_scores(scored.scores, scored.ok, shaping))
    assert tr.scores.tolist() == [0.25, 0.0, -1.0] and tr.mask.tolist() == [[True, False], [False, False], [True, True]]
    sources = dict(_sources("botgrpo_cli/reward_client", "botgrpo_cli/trainer"))
    from pathlib import Path

    for name in ("botgrpo_cli/reward_client/scored.py", "botgrpo_cli/trainer/rollouts.py"):
        assert "torch.where" not in sources[Path(name)] and "project_spans(" not in sources[Path(name)]
