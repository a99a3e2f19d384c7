"""Checkpoints under faults: damaged files, code in a .pt file, a full disk, an unusable --out."""

from __future__ import annotations

import errno
import json
import pickle
import random
import shutil
import struct

import numpy as np
import pytest
import torch

from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer import checkpoint
from botgrpo_cli.trainer.checkpoint import TrainState


@pytest.fixture(scope="module")
def parts(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    opt.step()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    return model, tok, opt, sched


def _save_two(run, parts):
    model, tok, opt, sched = parts
    for step in (1, 2):
        checkpoint.save(run, TrainState(step, step * 8), model, tok, opt, sched, "run: {}\n", keep_last=3)
    return [run / "checkpoints" / f"step-00000{s}" for s in (1, 2)]


class Planted:
    """Unpickling this runs code (creates a file): exactly what a checkpoint must never be able to do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def _damage(kind, ckpt, tmp_path):
    model_file = ckpt / "model" / "model.safetensors"
    if kind == "truncated_weights":
        model_file.write_bytes(model_file.read_bytes()[:-100])
    elif kind == "empty_optim":
        (ckpt / "optim.pt").write_bytes(b"")
    elif kind == "truncated_rng":
        data = (ckpt / "rng.pt").read_bytes()
        (ckpt / "rng.pt").write_bytes(data[: len(data) // 2])
    elif kind == "broken_state":
        (ckpt / "state.json").write_text('{"step": 2')
    elif kind == "broken_config_json":
        (ckpt / "model" / "config.json").write_text("{")
    elif kind == "code_in_rng":
        (ckpt / "rng.pt").write_bytes(pickle.dumps({"python": Planted(tmp_path / "pwned")}))
    elif kind == "missing_model":
        shutil.rmtree(ckpt / "model")
    elif kind == "zeroed_weights":  # same size, so only the checksum can tell
        model_file.write_bytes(_zeroed(model_file.read_bytes()))
    elif kind == "nan_weights":
        _write_nan_weights(model_file)
    elif kind == "state_step_999999":
        (ckpt / "state.json").write_text(json.dumps({"step": 999999, "data_position": 16}))
    elif kind == "missing_checksums":
        (ckpt / "checksums.json").unlink()
    elif kind == "extra_weights_file":
        (ckpt / "model" / "model-00002.safetensors").write_bytes(model_file.read_bytes())


def _zeroed(data: bytes) -> bytes:
    """The safetensors file with its tensor bytes (all after the header) set to zero."""
    (n,) = struct.unpack("<Q", data[:8])
    return data[: 8 + n] + bytes(len(data) - 8 - n)


def _write_nan_weights(path):
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    name = next(k for k, t in tensors.items() if t.is_floating_point())
    tensors[name] = torch.full_like(tensors[name], float("nan"))
    save_file(tensors, str(path), metadata={"format": "pt"})


@pytest.mark.parametrize("kind", ["truncated_weights", "empty_optim", "truncated_rng", "broken_state",
                                  "broken_config_json", "code_in_rng", "missing_model", "zeroed_weights",
                                  "nan_weights", "state_step_999999", "missing_checksums", "extra_weights_file"])
def test_a_damaged_latest_falls_back_to_the_newest_intact_one(parts, tmp_path, kind):
    run = tmp_path / "run"
    first, second = _save_two(run, parts)
    _damage(kind, second, tmp_path)
    warnings = []
    loaded = checkpoint.latest_intact(run, warnings.append)
    assert loaded.path == first and loaded.state == TrainState(1, 8)
    assert len(warnings) == 1 and "step-000002" in warnings[0] and "resuming from step-000001" in warnings[0]
    assert not (tmp_path / "pwned").exists()  # the pickled code never ran


def test_every_checkpoint_damaged_is_one_clear_error(parts, tmp_path):
    run = tmp_path / "run"
    for ckpt in _save_two(run, parts):
        (ckpt / "optim.pt").write_bytes(b"")
    with pytest.raises(UserError, match="no intact checkpoint.*step-000002: optim.pt differs from its checksum"):
        checkpoint.latest_intact(run, print)


def _adamw_with_warm_up(weights: torch.Tensor) -> tuple[torch.nn.Parameter, torch.optim.Optimizer, object]:
    """An AdamW and a 10-step linear warm-up over one parameter (a stand-in for the model's: what the
    checkpoint holds is the optimizer's and the scheduler's state, whatever they optimize)."""
    param = torch.nn.Parameter(weights.clone())
    opt = torch.optim.AdamW([param], lr=1e-2, betas=(0.9, 0.99))
    return param, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))


def _adamw_step(param, opt, sched, grad: torch.Tensor) -> None:
    param.grad = grad.clone()
    opt.step()
    sched.step()


def test_restore_brings_back_every_rng_and_the_optimizer(parts, tmp_path):
    """Into a fresh optimizer and scheduler: the moments, the step count and the warm-up's position
    come back, so the next step is the one the saved run would have taken."""
    model, tok, _, _ = parts
    grads = torch.randn(4, 5, generator=torch.Generator().manual_seed(1))
    param, opt, sched = _adamw_with_warm_up(torch.ones(5))
    for g in grads[:3]:
        _adamw_step(param, opt, sched, g)
    random.seed(3), np.random.seed(4), torch.manual_seed(5)
    checkpoint.save(tmp_path, TrainState(7, 70), model, tok, opt, sched, "x: 1\n", keep_last=1)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    fresh, fresh_opt, fresh_sched = _adamw_with_warm_up(param.detach())
    state = checkpoint.restore(checkpoint.read(tmp_path / "checkpoints" / "step-000007"), fresh_opt, fresh_sched)
    assert state == TrainState(7, 70)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected
    saved, loaded = opt.state_dict()["state"][0], fresh_opt.state_dict()["state"][0]
    assert set(loaded) == set(saved) and all(torch.equal(loaded[k], saved[k]) for k in saved)
    assert fresh_sched.last_epoch == 3 and fresh_sched.get_last_lr() == sched.get_last_lr()
    assert fresh_opt.param_groups[0]["lr"] == pytest.approx(4e-3)  # the warm-up's fourth step, not its first
    _adamw_step(param, opt, sched, grads[3])
    _adamw_step(fresh, fresh_opt, fresh_sched, grads[3])
    assert torch.equal(fresh, param)
    for f in ("optim.pt", "rng.pt"):  # plain tensors and containers: loadable with weights_only=True
        torch.load(tmp_path / "checkpoints" / "step-000007" / f, weights_only=True)


def test_a_full_disk_names_the_last_good_checkpoint(parts, tmp_path, monkeypatch):
    model, tok, opt, sched = parts
    run = tmp_path / "run"
    checkpoint.save(run, TrainState(1, 8), model, tok, opt, sched, "", keep_last=2)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError) as err:
        checkpoint.save(run, TrainState(2, 16), model, tok, opt, sched, "", keep_last=2)
    message = str(err.value)
    assert "No space left on device" in message and "last good checkpoint is" in message
    assert "step-000001" in message and "--resume --out" in message
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step-000001"]  # no half-written temp dir


def test_state_json_round_trips(parts, tmp_path):
    model, tok, opt, sched = parts
    path = checkpoint.save(tmp_path, TrainState(3, 24), model, tok, opt, sched, "a: 1\n", keep_last=1)
    assert json.loads((path / "state.json").read_text()) == {"step": 3, "data_position": 24}


def test_nan_weights_are_refused_even_with_matching_checksums(parts, tmp_path):
    """A run that diverged saves NaN weights honestly (checksums fit): resuming them is still refused."""
    run = tmp_path / "run"
    first, second = _save_two(run, parts)
    _write_nan_weights(second / "model" / "model.safetensors")
    recorded = checkpoint._checksums(second)  # as a save of these weights would record them
    recorded.pop("checksums.json")
    (second / "checksums.json").write_text(json.dumps(recorded))
    warnings = []
    assert checkpoint.latest_intact(run, warnings.append).path == first
    assert len(warnings) == 1 and "NaN or infinite values" in warnings[0]


def test_two_damaged_checkpoints_are_one_warning_line(parts, tmp_path):
    run = tmp_path / "run"
    model, tok, opt, sched = parts
    for step in (1, 2, 3):
        checkpoint.save(run, TrainState(step, step * 8), model, tok, opt, sched, "run: {}\n", keep_last=3)
    for step in (2, 3):
        (run / "checkpoints" / f"step-00000{step}" / "state.json").write_text('{"step": 999999, "data_position": 1}')
    warnings = []
    assert checkpoint.latest_intact(run, warnings.append).state == TrainState(1, 8)
    assert len(warnings) == 1 and "step-000003" in warnings[0] and "step-000002" in warnings[0]


def test_the_adaptive_entropy_controller_resumes_from_state_json(parts, tmp_path):
    model, tok, opt, sched = parts
    held = {"coef": 0.015, "last_entropy": float("inf")}  # inf: no measurement yet (trainer/controls.py)
    path = checkpoint.save(tmp_path, TrainState(3, 24, held), model, tok, opt, sched, "a: 1\n", keep_last=1)
    assert checkpoint.read(path).state == TrainState(3, 24, held)
