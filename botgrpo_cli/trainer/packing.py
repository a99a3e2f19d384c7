"""The row layout of a training forward: [left padding][prompt][completion], as generate numbers it."""

from __future__ import annotations

import torch
from torch import Tensor


def pack(prompt_ids: list[list[int]], completion_ids: Tensor, pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """[left padding][prompt][completion] -> input ids, attention mask, position ids; all (b, P + T).
    Every completion starts at column P, the longest prompt's length."""
    width = max(len(p) for p in prompt_ids)
    b, t = completion_ids.shape
    prompts = torch.full((b, width), pad_id, dtype=torch.long)
    attn = torch.zeros((b, width + t), dtype=torch.long)
    for i, p in enumerate(prompt_ids):
        prompts[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        attn[i, width - len(p):width] = 1
    attn[:, width:] = 1  # padding after a completion only affects positions nobody reads
    positions = (attn.cumsum(1) - 1).clamp(min=0)  # (b, P + T), as generate numbers left-padded rows
    return torch.cat([prompts, completion_ids], 1), attn, positions


def used_width(mask: Tensor) -> int:
    """Columns a forward over completions needs: through each row's last True column (at least 1).
    A multi-turn row's trained tokens need not be a prefix (tool tokens lie between its turns)."""
    if mask.numel() == 0 or not bool(mask.any()):
        return 1
    cols = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return int((mask.bool() * cols).amax())
