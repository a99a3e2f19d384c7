"""What `botgrpo vllm serve` takes from a client (rollout/vllm_requests.py): rows of token ids in
the vocabulary, pushes that are the served model's tensors, the bearer token; and the non-loopback
rule it shares with `botgrpo reward serve` (issue 50). The real engine's side: test_vllm_engine.py."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from botgrpo_cli.rollout.vllm_requests import (Refused, check_authorization, check_push, check_rows,
                                               model_parameters, split_token)

EXPECTED = {"embed.weight": (10, 4), "norm.weight": (4,)}


def _good() -> dict[str, torch.Tensor]:
    return {"embed.weight": torch.zeros(10, 4), "norm.weight": torch.ones(4, dtype=torch.bfloat16)}


@pytest.mark.parametrize("change, said", [
    (lambda t: t.update({"lm_head.weight": torch.zeros(10, 4)}), "does not have (e.g. 'lm_head.weight')"),
    (lambda t: t.pop("norm.weight"), "lacks 1 of the model's 2 tensors (e.g. 'norm.weight')"),
    (lambda t: t.update({"norm.weight": torch.ones(5)}), "'norm.weight' has shape [5], the served model's is [4]"),
    (lambda t: t.update({"embed.weight": torch.zeros(10, 4, dtype=torch.int64)}), "torch.int64; weights are float"),
])
def test_a_push_that_is_not_the_served_models_tensors_is_refused(change, said):
    check_push(_good(), EXPECTED)  # any floating dtype: vLLM casts to its own
    tensors = _good()
    change(tensors)
    with pytest.raises(Refused, match=said.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")) as err:
        check_push(tensors, EXPECTED)
    assert err.value.status == 400


def test_the_expected_tensors_are_the_ones_a_trainer_pushes(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from botgrpo_cli.rollout.vllm import policy_weights

    pushed = {name: tuple(t.shape) for name, t in policy_weights(AutoModelForCausalLM.from_pretrained(tiny_model_dir))}
    assert model_parameters(str(tiny_model_dir)) == pushed


@pytest.mark.parametrize("rows, seeds, said", [
    ([[1, 2], [3, 10**9]], [0, 1], "row 1: token id 1000000000 is not in the model's vocabulary (0..99)"),
    ([[-5]], [0], "row 0: token id -5 is not in the model's vocabulary"),
    ([[1], [True]], [0, 1], "row 1: token id True"),
    ([[1], []], [0, 1], "row 1 must be a non-empty list"),
    ([[1] * 50], [0], "row 0 has 50 tokens; the engine takes prompts shorter than 50"),
    ([[1]], [0.5], "row 0: the seed must be an integer"),
    ([[1]], [], "same length"),
])
def test_rows_outside_the_vocabulary_or_context_are_refused_naming_the_row(rows, seeds, said):
    assert check_rows({"rows": [[0, 99]], "seeds": [7]}, 100, 50) == ([[0, 99]], [7])
    with pytest.raises(Refused, match=said.replace("(", r"\(").replace(")", r"\)")):
        check_rows({"rows": rows, "seeds": seeds}, 100, 50)


def test_the_token_is_checked_and_read_from_the_url_or_the_environment(monkeypatch):
    monkeypatch.delenv("BOTGRPO_VLLM_TOKEN", raising=False)
    check_authorization(None, None)  # no token set: anyone on loopback
    check_authorization("Bearer s3cret", b"Bearer s3cret")
    for header in (None, "Bearer wrong", "s3cret"):
        with pytest.raises(Refused, match="missing or wrong bearer token") as err:
            check_authorization(header, b"Bearer s3cret")
        assert err.value.status == 401
    assert split_token("http://:s3cret@10.1.2.3:8011") == ("http://10.1.2.3:8011", "s3cret")
    assert split_token("http://s3cret@host:8011/") == ("http://host:8011/", "s3cret")
    assert split_token("http://host:8011") == ("http://host:8011", None)
    monkeypatch.setenv("BOTGRPO_VLLM_TOKEN", "fromenv")
    assert split_token("http://host:8011") == ("http://host:8011", "fromenv")


def test_vllm_serve_beyond_loopback_needs_a_token_before_anything_loads(monkeypatch, tmp_path):
    from botgrpo_cli.cli import app

    monkeypatch.delenv("BOTGRPO_VLLM_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["vllm", "serve", str(tmp_path), "--host", "0.0.0.0"])
    said = str(result.exception)  # the UserError that `botgrpo` prints as one line
    assert "refusing to serve on 0.0.0.0 without a token" in said and "--token (or set BOTGRPO_VLLM_TOKEN)" in said
    result = CliRunner().invoke(app, ["vllm", "serve", str(tmp_path), "--host", "0.0.0.0", "--token", " "])
    assert "--token is empty" in str(result.exception)
