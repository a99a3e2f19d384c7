"""What the lean decode loop samples from: repetition penalty, temperature, top-k, top-p and min-p,
with the meaning (and order) transformers' generate gives them, so both engines draw from one support.

Order, as in generate: the repetition penalty on the raw logits, then temperature, top-k, top-p and
min-p, each over what the previous ones kept. vLLM applies min-p before top-k and top-p; the kept
sets differ only when min_p and top_p < 1 are set together (docs/from-trl.md, "Generation").
"""

from __future__ import annotations

import torch
from torch import Tensor


def penalize_repeats(logits: Tensor, seen: Tensor, penalty: float) -> Tensor:
    """CTRL's repetition penalty (generate's and vLLM's): the logit of every token already in the prompt
    or the completion is divided by `penalty` when positive, multiplied when negative. seen (b, V) bool."""
    if penalty == 1.0:
        return logits
    penalized = torch.where(logits < 0, logits * penalty, logits / penalty)
    return torch.where(seen, penalized, logits)


def seen_tokens(ids: Tensor, valid: Tensor, vocab: int) -> Tensor:
    """(b, V) bool: which tokens occur among the valid positions of ids (b, P); padding is not a token
    the row has seen."""
    seen = torch.zeros((ids.shape[0], vocab + 1), dtype=torch.bool, device=ids.device)
    seen.scatter_(1, ids.masked_fill(~valid.bool(), vocab).clamp(max=vocab), True)
    return seen[:, :vocab]


def filtered_logits(logits: Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0,
                    min_p: float = 0.0) -> Tensor:
    """(b, V) logits scaled by the temperature, -inf outside the top-k, top-p and min-p sets.
    Ties at the k-th logit are kept (as generate's TopKLogitsWarper); the most likely token always is."""
    scaled = logits / temperature
    if 0 < top_k < scaled.shape[-1]:
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, -torch.inf)
    if top_p < 1.0:  # the smallest set of most likely tokens holding top_p of the mass
        probs, order = torch.softmax(scaled, -1).sort(-1, descending=True)
        drop = (probs.cumsum(-1) - probs) >= top_p
        drop[:, 0] = False
        scaled = scaled.masked_fill(torch.zeros_like(drop).scatter(1, order, drop), -torch.inf)
    if min_p > 0:  # tokens less likely than min_p times the most likely one
        probs = torch.softmax(scaled, -1)
        drop = probs < min_p * probs.amax(-1, keepdim=True)
        scaled = scaled.masked_fill(drop, -torch.inf)
    return scaled
