"""What `botgrpo vllm serve` takes from a client, checked before the engine sees it: a request
whose rows hold token ids outside the vocabulary, or a weight push that is not the served model's
tensors, is refused with a 4xx naming the row or the tensor, and the engine stays as it was (an id
past the vocabulary raises inside vLLM and dropped the connection; a push with an unknown name or
a wrong shape left vLLM's layers on the meta device, every later /generate failing).

A push must hold exactly the model's parameters (HF names, as the trainer's policy_weights gives
them: a tied head once), each of the model's shape and a floating-point dtype (vLLM casts to its
own): vLLM's reload replaces the layers as it goes, so a partial or unknown set cannot be undone.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any, Mapping

from botgrpo_cli.config import VLLM_TOKEN_ENV

if TYPE_CHECKING:
    import torch

Expected = dict[str, tuple[int, ...]]  # parameter name -> shape


class Refused(ValueError):
    """A request the server answers with a 4xx; the message says what to fix."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def model_parameters(model_path: str) -> Expected:
    """The served model's parameters as a trainer pushes them: an HF model of its config built on
    the meta device (no memory), named_parameters (a tied head once)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def check_push(tensors: Mapping[str, torch.Tensor], expected: Expected) -> None:
    """Refused (400) unless `tensors` are exactly the expected parameters, each of its shape and floating point."""
    unknown = sorted(set(tensors) - set(expected))
    missing = sorted(set(expected) - set(tensors))
    if unknown:
        raise Refused(400, f"the push holds {len(unknown)} tensors the served model does not have (e.g. "
                           f"{unknown[0]!r}); push the policy of the model this server serves")
    if missing:
        raise Refused(400, f"the push lacks {len(missing)} of the model's {len(expected)} tensors (e.g. "
                           f"{missing[0]!r}); a push must hold every parameter")
    for name, t in tensors.items():
        if tuple(t.shape) != expected[name]:
            raise Refused(400, f"tensor {name!r} has shape {list(t.shape)}, the served model's is "
                               f"{list(expected[name])}")
        if not t.is_floating_point():
            raise Refused(400, f"tensor {name!r} is {t.dtype}; weights are floating point")


def check_rows(request: Any, vocab: int, context: int) -> tuple[list[list[int]], list[int]]:
    """A /generate request's rows and seeds, checked: each row a non-empty list of token ids in
    [0, vocab) shorter than the context, one integer seed per row. Refused (400) naming the row."""
    if not isinstance(request, dict):
        raise Refused(400, "the body must be a JSON object with rows, seeds and options")
    rows, seeds = request.get("rows"), request.get("seeds")
    if not isinstance(rows, list) or not isinstance(seeds, list) or len(rows) != len(seeds):
        raise Refused(400, "rows and seeds must be lists of the same length")
    for i, (row, seed) in enumerate(zip(rows, seeds)):
        if not isinstance(row, list) or not row:
            raise Refused(400, f"row {i} must be a non-empty list of token ids")
        bad = next((t for t in row if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab), None)
        if bad is not None:
            raise Refused(400, f"row {i}: token id {bad!r} is not in the model's vocabulary (0..{vocab - 1})")
        if len(row) >= context:
            raise Refused(400, f"row {i} has {len(row)} tokens; the engine takes prompts shorter than {context}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise Refused(400, f"row {i}: the seed must be an integer, got {seed!r}")
    return rows, seeds


def split_token(url: str) -> tuple[str, str | None]:
    """rollout.vllm_url -> (the URL without its user info, the bearer token): the URL's password,
    else its user name (http://:TOKEN@HOST:PORT or http://TOKEN@HOST:PORT), else $BOTGRPO_VLLM_TOKEN.
    Only the first goes into messages."""
    import os
    from urllib.parse import unquote, urlsplit

    from botgrpo_cli.redact import public_url

    parts = urlsplit(url)
    token = unquote(parts.password or parts.username or "") or os.environ.get(VLLM_TOKEN_ENV) or None
    return public_url(url), token


def check_authorization(header: str | None, expected: bytes | None) -> None:
    """Refused (401) unless the request carries the server's bearer token (when it has one);
    compared in constant time."""
    if expected is None:
        return
    if not hmac.compare_digest((header or "").encode("utf-8", "replace"), expected):
        raise Refused(401, "missing or wrong bearer token (Authorization: Bearer ...): give the server's "
                           f"--token to the trainer in rollout.vllm_url (http://:TOKEN@HOST:PORT) or ${VLLM_TOKEN_ENV}")
