"""TRL's GRPOConfig as a botgrpo Config (botgrpo_cli/trl_args.py): TRL's batch arithmetic in TRL's
units, its defaults meaning what they mean in TRL, and one line for a field set away from its
default that has no counterpart. Also the schedules (optim.lr_scheduler) against transformers'."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import get_scheduler
from trl import GRPOConfig

from botgrpo_cli import AlgoConfig, Config, OptimConfig, RunConfig, Trainer
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.update import make_optimizer
from botgrpo_cli.trl_args import KEEP_ALL, from_trl

CPU = {"output_dir": "runs/trl", "use_cpu": True, "report_to": "none"}


def test_trl_defaults_mean_what_they_mean_in_trl():
    cfg = Trainer(args=GRPOConfig(**CPU, max_steps=7)).config
    assert (cfg.rollout.group_size, cfg.rollout.prompts_per_step, cfg.rollout.max_new_tokens) == (8, 1, 512)
    assert (cfg.optim.lr, cfg.optim.lr_scheduler, cfg.optim.warmup_steps) == (1e-6, "linear", 0)  # decay to 0
    assert cfg.optim.betas == [0.9, 0.999] and cfg.optim.micro_batch_size == 8
    assert cfg.algo.loss_agg == "dapo" and cfg.algo.beta == 0.0 and cfg.algo.mini_batches == 1
    assert (cfg.run.steps, cfg.run.seed, cfg.run.out_dir, cfg.log.every) == (7, 42, "runs/trl", 10)
    assert cfg.run.keep_last == KEEP_ALL and cfg.model.gradient_checkpointing and cfg.rollout.engine == "fast"
    assert not cfg.log.tensorboard and cfg.model.autocast == "auto"  # bf16: where this hardware runs it fast
    assert Trainer(args={**CPU, "max_steps": 7}).config == cfg  # a dict of the same fields
    assert from_trl({**CPU, "bf16": False, "max_steps": 1}).model.autocast == "off"


def test_the_batch_arithmetic_is_trls():
    # a generation of 4 x 4 = 16 completions (8 prompts x 2), optimizer steps of 4 x 2 = 8: two per generation
    cfg = from_trl({**CPU, "num_generations": 2, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
                    "steps_per_generation": 4, "num_iterations": 3, "max_steps": 12, "warmup_steps": 6,
                    "save_steps": 6, "logging_steps": 0.5})
    assert (cfg.rollout.prompts_per_step, cfg.algo.mini_batches, cfg.algo.epochs) == (8, 2, 3)
    assert cfg.algo.mini_batch_split == "rows"  # TRL shuffles the generation batch before slicing it
    assert (cfg.run.steps, cfg.optim.warmup_steps, cfg.run.save_every, cfg.log.every) == (2, 1, 1, 1)
    # max_steps=-1: num_train_epochs over the dataset's prompts
    rows = Dataset.from_list([{"prompt": str(i)} for i in range(10)])
    assert Trainer(args={**CPU, "num_train_epochs": 2, "num_generations": 2}, train_dataset=rows).config.run.steps == 5
    # "epoch" strategies: a save (an evaluation) per pass over the dataset (3 steps of 4 prompts), max_steps or not
    for length in ({"num_train_epochs": 2}, {"max_steps": 12}):
        args = {**CPU, **length, "num_generations": 2, "save_strategy": "epoch", "eval_strategy": "epoch"}
        run = Trainer(args=args, train_dataset=rows).config.run
        assert (run.save_every, run.eval_every) == (3, 3)
    run = Trainer(args={**CPU, "max_steps": 12, "eval_strategy": "steps", "eval_steps": 2}, train_dataset=rows).config.run
    assert run.eval_every == 2
    with pytest.raises(UserError, match="set max_steps"):
        from_trl({**CPU})
    with pytest.raises(UserError, match="not a multiple of gradient_accumulation_steps"):
        from_trl({**CPU, "max_steps": 1, "steps_per_generation": 3, "gradient_accumulation_steps": 2})


def test_fields_without_a_counterpart_pass_at_trls_default_and_name_what_to_do_otherwise():
    from_trl(GRPOConfig(**CPU, max_steps=1, disable_dropout=False, shuffle_dataset=True, vllm_mode="colocate"))
    with pytest.raises(UserError, match=r"^GRPOConfig\(label_smoothing_factor=0.1\): .*; "
                                        r"GRPOConfig\(entropy_target=0.5\): .*use_adaptive_entropy=True.*$"):
        from_trl({**CPU, "max_steps": 1, "label_smoothing_factor": 0.1, "entropy_target": 0.5})
    with pytest.raises(UserError, match=r"GRPOConfig\(label_smoothing_factor=0.1\): it has no counterpart"):
        from_trl({**CPU, "max_steps": 1, "label_smoothing_factor": 0.1})
    with pytest.raises(UserError, match="not GRPOConfig fields.*num_generation;"):
        from_trl({**CPU, "num_generation": 4})
    with pytest.raises(UserError, match="only the dtype has a counterpart"):
        from_trl({**CPU, "max_steps": 1, "model_init_kwargs": {"dtype": "bfloat16", "attn_implementation": "sdpa"}})
    assert from_trl({**CPU, "max_steps": 1, "model_init_kwargs": {"dtype": "bfloat16"}}).model.dtype == "bfloat16"
    with pytest.raises(UserError, match="report_to.*trackio"):
        from_trl({**CPU, "max_steps": 1, "report_to": ["trackio"]})
    # vLLM's settings have a counterpart, with use_vllm; TRL's deprecated clip name means clip_max, as in TRL
    with pytest.raises(UserError, match=r"^GRPOConfig\(vllm_gpu_memory_utilization=0.5\): it takes effect with use_vllm"):
        from_trl({**CPU, "max_steps": 1, "vllm_gpu_memory_utilization": 0.5})
    with pytest.warns(FutureWarning):
        assert from_trl({**CPU, "max_steps": 1, "vllm_importance_sampling_cap": 2.5}).algo.mismatch_is_max == 2.5


def test_reward_options_are_checked_against_the_reward_funcs_given_beside_them():
    def a(completions, **kwargs):
        return [0.0] * len(completions)

    args = {**CPU, "max_steps": 1, "reward_weights": [1.0, 0.5]}
    assert Trainer(reward_funcs=[a, a], args=args).config.reward.weights == [1.0, 0.5]
    with pytest.raises(UserError, match=r"reward.weights must be 3 finite number\(s\), one per reward.function"):
        Trainer(reward_funcs=[a, a, a], args=args)
    # GDPO needs two reward functions: the ones given beside args count (as a GRPOConfig or a Config)
    gdpo = {**args, "multi_objective_aggregation": "normalize_then_sum"}
    assert Trainer(reward_funcs=[a, a], args=gdpo).config.algo.reward_aggregation == "normalize_then_sum"
    native = Config(algo=AlgoConfig(reward_aggregation="normalize_then_sum"))
    assert Trainer(reward_funcs=[a, a], args=native).config.reward.function == [a, a]
    with pytest.raises(UserError, match="normalize_then_sum.*needs two or more"):
        Trainer(reward_funcs=a, args=native)


def test_a_dataset_without_a_prompt_column_is_refused_at_construction():
    with pytest.raises(UserError, match="has no 'prompt' column \\(its columns: question\\).*rename_column"):
        Trainer(train_dataset=[{"question": "1+1="}])


def _lrs(sched, n):
    out = []
    for _ in range(n):
        out.append(sched.get_last_lr()[0])
        sched.optimizer.step()
        sched.step()
    return out


@pytest.mark.parametrize("name, options", [("cosine", {}), ("linear", {}), ("cosine_with_restarts", {"num_cycles": 2}),
                                           ("polynomial", {"power": 2.0}), ("constant_with_warmup", {})])
def test_each_schedule_is_transformers_and_a_resume_restores_it(name, options):
    cfg = Config(optim=OptimConfig(lr=0.1, lr_scheduler=name, lr_scheduler_options=options, warmup_steps=2),
                 run=RunConfig(steps=8))
    model = torch.nn.Linear(2, 1)
    reference = get_scheduler(name, torch.optim.AdamW(model.parameters(), lr=0.1), num_warmup_steps=2,
                              num_training_steps=8, scheduler_specific_kwargs=options)
    expected = _lrs(reference, 8)
    opt, sched = make_optimizer(model, cfg)
    first = _lrs(sched, 3)
    saved = sched.state_dict()
    opt2, resumed = make_optimizer(model, cfg)  # a resumed run builds its scheduler anew, then loads the state
    resumed.load_state_dict(saved)
    assert first + _lrs(resumed, 5) == pytest.approx(expected, rel=0, abs=1e-12)
    assert len(set(expected)) > 2  # the schedule moves


def test_tools_importable_by_name_become_specs_and_the_others_stay_functions(tmp_path):
    from botgrpo_cli.trl_tools import tool_spec

    assert Trainer(tools=["calculator", "my_tools.py:lookup"]).config.run.tools == ["calculator", "my_tools.py:lookup"]
    assert tool_spec(make_optimizer) == "botgrpo_cli.trainer.update:make_optimizer"  # from a package: by module
    with pytest.raises(UserError, match="not a plain function"):
        tool_spec(str.upper)

    def inner(a: int) -> int:
        return a

    script = tmp_path / "train.py"  # a script without `if __name__ == "__main__":`, as TRL's examples are
    script.write_text("def add(a: int) -> int:\n    return a\n\nadd\n")
    main = {"__name__": "__main__", "__file__": str(script)}
    exec(compile(script.read_text(), str(script), "exec"), main)
    for fn in (main["add"], inner):  # no worker imports them (turns/tools.py forks workers that inherit them)
        assert tool_spec(fn) is fn
    with pytest.raises(UserError, match="both name the tools"):
        Trainer(tools=["calculator"], args=Config(run=RunConfig(tools=["calculator"])))


def test_a_schedule_option_it_does_not_take_is_one_line():
    cfg = Config(optim=OptimConfig(lr=0.1, lr_scheduler="cosine", lr_scheduler_options={"num_cyles": 2}))
    with pytest.raises(UserError, match="lr_scheduler_options .*num_cyles.* do not fit the cosine schedule"):
        make_optimizer(torch.nn.Linear(2, 1), cfg)


def test_disable_dropout_zeroes_every_dropout_layer_of_the_trained_policy():
    import torch
    from botgrpo_cli.trainer.policy import without_dropout

    assert from_trl({**CPU, "max_steps": 1, "disable_dropout": True}).model.disable_dropout
    assert not from_trl({**CPU, "max_steps": 1}).model.disable_dropout  # TRL's default: off
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5), torch.nn.Dropout(0.1)).train()
    x = torch.ones(64, 4)
    assert not torch.equal(model(x), model(x))  # dropout on: two training forwards differ
    without_dropout(model)
    assert torch.equal(model(x), model(x)) and all(m.p == 0.0 for m in model if isinstance(m, torch.nn.Dropout))


def test_load_model_applies_disable_dropout_to_the_trained_policy_lora_included(tmp_path):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.trainer.policy import load_model

    Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1)).save_pretrained(tmp_path)
    dropouts = lambda m: [x.p for x in m.modules() if isinstance(x, torch.nn.Dropout)]  # noqa: E731
    lora = dict(lora_r=2, lora_dropout=0.3, lora_target_modules=["q_proj"])
    assert set(dropouts(load_model(str(tmp_path), ModelConfig(**lora)))) == {0.3}  # LoRA's dropout, kept by default
    assert set(dropouts(load_model(str(tmp_path), ModelConfig(**lora, disable_dropout=True)))) == {0.0}
