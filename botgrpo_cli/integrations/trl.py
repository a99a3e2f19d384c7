"""TRL adapters (trl >= 1.16, < 1.17): a reward function backed by a botgrpo reward service, and
`BoTGRPOTrainer`, a `GRPOTrainer` that trains on token-level BoT-GRPO advantages.

    from botgrpo_cli.integrations.trl import BoTGRPOTrainer, reward_function
    trainer = BoTGRPOTrainer(model, reward_funcs=reward_function("math"), args=GRPOConfig(...),
                             train_dataset=dataset)   # dataset: "prompt" + reference columns ("answer")
    trainer = BoTGRPOTrainer(model, reward_funcs=[my_span_reward], ...)   # or Python reward functions
"""

from __future__ import annotations

import atexit
import copy
import inspect
from typing import Any, Sequence

import torch
from trl import GRPOTrainer

from botgrpo_cli.algos import ADVANTAGES, compute_advantages, isolate_failed
from botgrpo_cli.algos.options import trainer_inputs
from botgrpo_cli.integrations.service import ServiceScorer, references
from botgrpo_cli.models.gguf import is_gguf, resolve_gguf
from botgrpo_cli.reward_client.scored import Scored, to_token_rewards
from botgrpo_cli.rollout import OffsetDecoder
from botgrpo_cli.trainer.rollouts import step_ends
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, ScoreRequest

# Keyword arguments TRL passes to reward functions that are not dataset columns.
_CONTROL_KWARGS = ("trainer_state", "log_extra", "log_metric", "environments", "completion_ids")


def model_path(model: Any) -> Any:
    """A model as TRL loads it: a .gguf file or a packaged GGUF name (as `botgrpo train --model` takes
    them) becomes its cached folder, dequantised to float32 once; anything else is returned as it is."""
    return resolve_gguf(str(model), "float32") if isinstance(model, str) and is_gguf(model) else model


def _text(item: Any) -> str:
    """A prompt or completion as text: plain strings as they are, conversations by their last message."""
    if isinstance(item, str):
        return item
    if isinstance(item, list) and item and isinstance(item[-1], dict):
        content = item[-1].get("content", "")
        return content if isinstance(content, str) else "".join(
            part.get("text", "") for part in content if isinstance(part, dict))
    raise TypeError(f"expected text or a list of chat messages, got {type(item).__name__}")


class ServiceReward:
    """A TRL reward function: the service's sequence score per completion.

    A completion the service could not score (status `error` or `timeout`) gets None, which TRL
    reads as "no reward" (NaN): it is left out of the group baseline and, when no other reward
    function scores it, its advantage is 0. The last batch's responses are kept in `last`.
    """

    def __init__(self, scorer: ServiceScorer, reference_columns: Sequence[str] | None = None):
        self.scorer = scorer
        self.reference_columns = None if reference_columns is None else list(reference_columns)
        self.__name__ = scorer.service  # TRL logs rewards/<name>/mean
        self.last: Scored | None = None

    def score(self, prompts: list, texts: list[str], kwargs: dict[str, Any]) -> Scored:
        columns = {k: v for k, v in kwargs.items() if k not in _CONTROL_KWARGS}
        refs = references(columns, len(texts), self.reference_columns)
        self.last = self.scorer.score([_text(p) for p in prompts], texts, refs)
        return self.last

    def __call__(self, prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        return self.score(prompts, [_text(c) for c in completions], kwargs).values

    def close(self) -> None:
        self.scorer.close()


def reward_function(service: str, *, reference_columns: Sequence[str] | None = None, workers: int = 1,
                    url: str | None = None, options: dict | None = None, deadline_ms: int = DEFAULT_DEADLINE_MS,
                    command: list[str] | None = None, env: dict[str, str] | None = None) -> ServiceReward:
    """A TRL reward function scoring completions with the botgrpo reward service `service`.

    reference_columns: dataset columns sent as the request's `reference` (default: a `reference`
    column of dicts if there is one, else every dataset column). options: the service's knobs
    (math: {"steps": True}). url: use a running `botgrpo reward serve NAME --http` instead of
    starting `workers` local processes. Returns a list of float, None where scoring failed.
    """
    scorer = ServiceScorer(service, workers=workers, url=url, options=options, deadline_ms=deadline_ms,
                           command=command, env=env)
    return ServiceReward(scorer, reference_columns)


class FunctionReward:
    """Python reward functions as BoTGRPOTrainer's reward: callables or FILE.py:NAME / MODULE:NAME specs,
    each called once per batch with TRL's keywords in a process of its own (FunctionPool, as `botgrpo
    train` calls them), returning per completion a number, None or {score, spans, metrics}; the
    weighted sum of the functions that scored a completion is its score, their weighted spans its
    token rewards."""

    def __init__(self, functions: Sequence[Any], weights: Sequence[float] | None = None,
                 deadline_ms: int = DEFAULT_DEADLINE_MS):
        from botgrpo_cli.reward_client.functions import FunctionPool

        self.pool = FunctionPool(list(functions), weights)
        atexit.register(self.pool.close)  # the functions' processes end with the trainer even without close()
        self.deadline_ms = deadline_ms
        self.__name__ = self.pool.service  # TRL logs rewards/<name>/mean
        self.last: Scored | None = None

    def score(self, prompts: list, texts: list[str], kwargs: dict[str, Any]) -> Scored:
        columns = {k: v for k, v in kwargs.items() if k not in _CONTROL_KWARGS}
        requests = [ScoreRequest(id=str(i), completion=text, prompt=_text(prompt), reference=ref,
                                 deadline_ms=self.deadline_ms)
                    for i, (prompt, text, ref) in enumerate(zip(prompts, texts, references(columns, len(texts), None)))]
        state = kwargs.get("trainer_state")
        extras = {"messages": [p if isinstance(p, list) else None for p in prompts],
                  "completion_ids": [list(map(int, ids)) for ids in kwargs.get("completion_ids") or []] or None,
                  "trainer_state": None if state is None else {
                      "global_step": state.global_step, "max_steps": state.max_steps, "epoch": state.epoch}}
        self.last = Scored(self.pool.score_batch(requests, {k: v for k, v in extras.items() if v is not None}),
                           list(texts))
        return self.last

    def __call__(self, prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        return self.score(prompts, [_text(c) for c in completions], kwargs).values

    def close(self) -> None:
        self.pool.close()


def token_level_reward(reward_funcs: Any, weights: Sequence[float] | None = None) -> ServiceReward | FunctionReward:
    """BoTGRPOTrainer's reward: one `reward_function(SERVICE)`, or Python reward functions (a callable,
    a FILE.py:NAME / MODULE:NAME spec, or a list of them, weighted by `weights`)."""
    funcs = list(reward_funcs) if isinstance(reward_funcs, (list, tuple)) else [reward_funcs]
    if len(funcs) == 1 and isinstance(funcs[0], (ServiceReward, FunctionReward)):
        return funcs[0]
    if funcs and all(not isinstance(f, (ServiceReward, FunctionReward)) and
                     (callable(f) or (isinstance(f, str) and ":" in f)) for f in funcs):
        return FunctionReward(funcs, weights)
    raise TypeError("BoTGRPOTrainer needs reward_funcs=reward_function(SERVICE) (one reward service) or Python reward "
                    "functions: callables or 'path/to/file.py:NAME' strings, one or a list (returning per completion "
                    "a number, None or {score, spans, metrics})")


class _TokenLevelReward:
    """Scores the exact text of the generated ids and keeps offsets for span projection."""

    def __init__(self, reward: ServiceReward | FunctionReward, decoder: OffsetDecoder | None = None):
        self.reward, self.decoder = reward, decoder
        self.__name__ = reward.__name__
        self.offsets: list[list[tuple[int, int]]] = []

    def __call__(self, prompts: list, completions: list, completion_ids: list[list[int]], **kwargs: Any) -> list:
        decoded = [self.decoder.decode(list(ids)) for ids in completion_ids]
        self.offsets = [offsets for _, offsets in decoded]
        texts = [text for text, _ in decoded]
        return self.reward.score(prompts, texts, {**kwargs, "completion_ids": completion_ids}).values


SEQUENCE_LEVEL_REFUSED = (
    "BoTGRPOTrainer: importance_sampling_level='sequence' (GSPO) gives each completion one ratio, so TRL's loss "
    "weighs its gradient by the mean of the row's token advantages and {advantage}'s token credit is lost; use "
    "importance_sampling_level='token', or advantage='grpo' for sequence-level GSPO, or `botgrpo train --algo gspo` "
    "(GSPO-token: the sequence ratio with per-token gradients)")


def gives_token_credit(advantage: str, options: dict, lambda_seq: float, lambda_tok: float,
                       steps: bool = True) -> bool:
    """Does `advantage` give different tokens of one completion different advantages? Decided by running
    it on a probe batch (two groups of three, token rewards varying within each row; two steps a row,
    or with steps=False, as with step_separator=None, one), never by name; the estimator gets the
    trainer's inputs its annotations ask for, as in training."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.rand(6, generator=gen)
    rho = torch.rand(6, 5, generator=gen) - 0.5
    ends = torch.zeros(6, 5, dtype=torch.bool)
    ends[:, [1, 4] if steps else [4]] = True
    inputs = trainer_inputs(advantage, ADVANTAGES[advantage], options,
                            {"step_ends": lambda: ends, "process_rewards": lambda: lambda_tok * rho})
    adv = compute_advantages(advantage, token_rewards=lambda_seq * scores[:, None] + lambda_tok * rho, scores=scores,
                             mask=torch.ones(6, 5, dtype=torch.bool), group_ids=torch.arange(6) // 3, **inputs)
    return bool((adv.amax(1) - adv.amin(1)).abs().max() > 1e-6)


class BoTGRPOTrainer(GRPOTrainer):
    """`GRPOTrainer` with token-level advantages from a botgrpo reward service (BoT-GRPO by default).

    Same arguments as GRPOTrainer, except that `reward_funcs` is one `reward_function(SERVICE)` or
    Python reward functions (token_level_reward), weighted by args.reward_weights as in TRL, and that
    `model` may also be a .gguf file or packaged GGUF name (model_path).
    Each batch: the reward scores the decoded completion ids; its spans are projected onto those
    ids' tokens (code-point offsets), r = lambda_seq * score + lambda_tok * rho; advantages (B, T)
    come from `compute_advantages(advantage, ...)` over TRL's groups, with TRL's `scale_rewards`
    as `scale`; TRL's loss takes them as they are. Rows the service failed to score get 0.
    An estimator that asks the trainer for step boundaries (pure) gets them from `step_separator`
    ("\\n\\n", the math tasks' steps; None: one step per completion), and one that asks for process
    rewards gets lambda_tok * rho, as under `botgrpo train`.
    """

    def __init__(self, model: Any, reward_funcs: Any, args: Any = None, *,
                 advantage: str = "bot_grpo", advantage_options: dict | None = None,
                 lambda_seq: float = 1.0, lambda_tok: float = 1.0, step_separator: str | None = "\n\n",
                 **kwargs: Any):
        for unsupported in ("tools", "environment_factory"):
            if kwargs.get(unsupported) is not None:
                raise ValueError(f"BoTGRPOTrainer does not support {unsupported}= (tool tokens have no service spans)")
        estimator = ADVANTAGES[advantage]  # unknown name -> KeyError listing the known ones, before the model loads
        options = ADVANTAGES.check_options(advantage, dict(advantage_options or {}), positional=4)  # typed, ranged
        token_credit = gives_token_credit(advantage, options, lambda_seq, lambda_tok,  # also: the inputs it asks for
                                          steps=step_separator is not None)
        if getattr(args, "importance_sampling_level", "token") == "sequence" and token_credit:
            raise ValueError(SEQUENCE_LEVEL_REFUSED.format(advantage=advantage))
        weights = getattr(args, "reward_weights", None)
        self.token_reward = _TokenLevelReward(token_level_reward(reward_funcs, weights))  # weighs the functions itself
        self.advantage, self.lambda_seq, self.lambda_tok = advantage, lambda_seq, lambda_tok
        self.step_separator = step_separator
        self.advantage_options = options
        if weights is not None:  # TRL would weigh the one combined reward it sees; the caller's args stay as given
            args = copy.copy(args)  # (dataclasses.replace would run GRPOConfig's __post_init__ again)
            args.reward_weights = None
        super().__init__(model_path(model), reward_funcs=[self.token_reward], args=args, **kwargs)
        self.token_reward.decoder = OffsetDecoder(self._tokenizer)
        if "scale" in inspect.signature(estimator).parameters:
            self.advantage_options.setdefault("scale", self.scale_rewards)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        output["advantages"] = self._token_advantages(output)
        return output

    def _token_advantages(self, output: dict[str, Any]) -> torch.Tensor:
        """(B, T) advantages for this process's rows; group statistics use every process's rows."""
        tr = to_token_rewards(self.token_reward.reward.last, self.token_reward.offsets,
                              output["completion_mask"], self.lambda_seq, self.lambda_tok)  # mask: truncations already 0
        r_all, m_all, s_all, ok_all = self._gather_rows(tr.r, tr.mask.float(), tr.scores, tr.ok.float())  # bool: no collective
        m_all, ok_all = m_all.bool(), ok_all.bool()
        rows = torch.arange(len(s_all), device=s_all.device)
        mode = "train" if self.model.training else "eval"
        groups = rows // (self.num_generations if mode == "train" else self.num_generations_eval)
        groups = isolate_failed(groups, ok_all)  # failed rows: own group, advantage 0
        T = tr.mask.shape[1]
        texts = self.token_reward.reward.last.texts
        computes = {  # each rank computes its own rows, gathered as r was (every rank asks for the same)
            "step_ends": lambda: self._gather_rows(step_ends(texts, self.token_reward.offsets, self.step_separator, T)
                                                   .to(tr.mask.device).float())[0].bool(),
            "process_rewards": lambda: self._gather_rows(self.lambda_tok * tr.rho)[0]}
        options = trainer_inputs(self.advantage, ADVANTAGES[self.advantage], self.advantage_options, computes)
        adv = compute_advantages(self.advantage, token_rewards=r_all, scores=s_all, mask=m_all, group_ids=groups,
                                 **options)  # (B_all, T_max)
        start = self.accelerator.process_index * tr.mask.shape[0]
        return adv[start:start + tr.mask.shape[0], : tr.mask.shape[1]]

    def _gather_rows(self, *tensors: torch.Tensor) -> list[torch.Tensor]:
        """Rows of every process in rank order; (B, T) tensors padded to the longest T first."""
        acc = self.accelerator
        out = []
        for t in tensors:
            if t.dim() == 2:
                t = acc.pad_across_processes(t, dim=1, pad_index=0)
            out.append(acc.gather(t))
        return out
