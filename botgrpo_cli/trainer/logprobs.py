"""Per-token log-probabilities of sampled completions, in micro-batches (bounded memory)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from botgrpo_cli.trainer.packing import pack, used_width
from botgrpo_cli.trainer.shared_prompt import completion_logits, runs_of_equal_prompts, why_not_shared


def forward_logps(model: Any, prompt_ids: list[list[int]], completion_ids: Tensor, pad_id: int,
                  temperature: float, with_entropy: bool = False, entropy_grad: bool = False,
                  share_prompts: bool = True) -> tuple[Tensor, Tensor | None]:
    """log pi(y_t | x, y_<t) for each completion token -> (b, T) on the model's device; entropy (b, T)
    if asked, differentiable with entropy_grad (an entropy bonus), else detached (a metric).
    Consecutive rows with the same prompt run it once where that is exact (trainer/shared_prompt.py)."""
    device = next(model.parameters()).device
    t = completion_ids.shape[1]
    runs = runs_of_equal_prompts(prompt_ids)
    if share_prompts and len(runs) < len(prompt_ids) and why_not_shared(model) is None:
        logits = completion_logits(model, prompt_ids, completion_ids.to(device), pad_id, runs)
    else:  # pack builds on the CPU: the completions join it there, then all of it moves
        ids, attn, pos = (x.to(device) for x in pack(prompt_ids, completion_ids.cpu(), pad_id))
        logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, logits_to_keep=t + 1).logits[:, :-1]
    logits = logits.float() / max(temperature, 1e-6)  # (b, T, V): logits predicting y_t
    logp_all = torch.log_softmax(logits, -1)  # (b, T, V)
    logp = logp_all.gather(-1, completion_ids.to(device)[..., None]).squeeze(-1)  # (b, T)
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            entropy = -(logp_all.exp() * logp_all).sum(-1)  # (b, T)
    return logp, entropy


@torch.no_grad()
def batch_logps(model: Any, prompt_ids: list[list[int]], completion_ids: Tensor, mask: Tensor, pad_id: int,
                temperature: float, micro_batch: int) -> Tensor:
    """No-grad log-probs for the whole batch (behaviour or reference policy) -> (B, T), 0 on padding."""
    was_training = model.training
    model.eval()
    out = torch.zeros(completion_ids.shape, dtype=torch.float32)
    for lo in range(0, completion_ids.shape[0], micro_batch):
        hi = lo + micro_batch
        width = used_width(mask[lo:hi])
        logp, _ = forward_logps(model, prompt_ids[lo:hi], completion_ids[lo:hi, :width], pad_id, temperature)
        out[lo:hi, :width] = logp.float().cpu() * mask[lo:hi, :width]
    model.train(was_training)
    return out
