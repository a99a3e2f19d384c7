"""reward.stream: rows go to scoring as each ends (overlapping generation), or after the whole batch
when generation has the CPU to itself; either way every row is scored once, in its place."""

from __future__ import annotations

import types
from concurrent.futures import Future

import pytest
import torch

from botgrpo_cli.config import load_config
from botgrpo_cli.rollout import RolloutBatch, SamplingParams
from botgrpo_cli.trainer import rollouts
from botgrpo_cli.trainer.distributed import Dist
from botgrpo_cli.trainer.rollouts import streams_scoring


@pytest.mark.parametrize("setting, on_cpu, threads, processes, cores, want", [
    ("always", True, 2, 1, 2, True),
    ("after", False, 1, 1, 64, False),
    ("auto", False, 8, 1, 8, True),  # generation on an accelerator: the cores are free for the services
    ("auto", True, 2, 1, 2, False),  # the CPU decode loop has a thread on every core
    ("auto", True, 1, 2, 2, False),  # two training processes, a thread each, on 2 cores
    ("auto", True, 4, 1, 16, True),  # spare cores for the services
])
def test_auto_streams_unless_the_cpu_generation_takes_every_core(setting, on_cpu, threads, processes, cores, want):
    assert streams_scoring(setting, on_cpu, threads, processes, cores) is want


class _Engine:
    """Ends rows 1 and 3 early (on_done during generation), then returns the batch; records when."""

    pad_id = 0

    def __init__(self, log: list):
        self.log = log

    def generate(self, prompts, n, params, on_done=None):
        texts = [f"{p} #{k}" for p in prompts for k in range(n)]
        for i in (1, 3):
            if on_done is not None:
                on_done(i, texts[i])
        self.log.append("generated")
        b = len(texts)
        return RolloutBatch(prompt_ids=[[1]] * b, completion_ids=torch.ones(b, 2, dtype=torch.long),
                            mask=torch.ones(b, 2, dtype=torch.bool), texts=texts, offsets=[[(0, 1)]] * b,
                            group_ids=torch.arange(len(prompts)).repeat_interleave(n), finished=torch.ones(b, dtype=torch.bool))


def _session(stream: str, log: list):
    cfg = load_config(None, algo="grpo", sets=["rollout.prompts_per_step=2", "rollout.group_size=2",
                                               f"reward.stream={stream}", "run.task=arith_synth"])
    examples = [types.SimpleNamespace(prompt=f"p{k}", reference={}) for k in range(2)]

    def submit(request):
        log.append(request.id)
        done = Future()
        done.set_result(request)
        return done

    return types.SimpleNamespace(
        cfg=cfg, dist=Dist(), engine=_Engine(log), turns=None, params=SamplingParams(max_new_tokens=2),
        stream=types.SimpleNamespace(take=lambda n: examples[:n]), pool=types.SimpleNamespace(submit=submit),
        prompt_texts=lambda exs: [ex.prompt for ex in exs], request_options=lambda prompts: [{} for _ in prompts])


@pytest.mark.parametrize("stream, sent_before", [("always", ["s0r0-1", "s0r0-3"]), ("after", [])])
def test_rows_are_sent_while_generating_or_after_and_each_once(stream, sent_before):
    log: list = []
    batch, rows, futures = rollouts._round(_session(stream, log), 0, 0)
    ends = log.index("generated")
    assert log[:ends] == sent_before
    assert sorted(log[:ends] + log[ends + 1:]) == [f"s0r0-{i}" for i in range(4)]  # every row once
    assert [f.result().completion for f in futures] == batch.texts  # each answer in its row's place
