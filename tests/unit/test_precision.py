"""Choosing bf16 autocast: the setting, the CPU's instructions, the model's size and dtype."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.models import precision


class Sized(torch.nn.Module):
    def __init__(self, n: int, dtype=torch.float32):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(n, dtype=dtype))


def test_off_and_forced(monkeypatch):
    monkeypatch.setattr(precision, "cpu_bf16", lambda: None)
    assert precision.choose("off", Sized(10**8))[0] is False
    on, why = precision.choose("bfloat16", Sized(10))
    assert on and "emulated" in why


@pytest.mark.parametrize("isa,n,dtype,expected", [
    ("AVX512-BF16", precision.AUTO_MIN_PARAMS, torch.float32, True),
    ("AMX", precision.AUTO_MIN_PARAMS, torch.float32, True),
    ("AVX512-BF16", precision.AUTO_MIN_PARAMS - 1, torch.float32, False),  # tiny models: bf16 measured slower
    (None, precision.AUTO_MIN_PARAMS, torch.float32, False),  # no native bf16: emulation is slow
    ("AMX", precision.AUTO_MIN_PARAMS, torch.bfloat16, False),  # weights already bf16: nothing to autocast
])
def test_auto(monkeypatch, isa, n, dtype, expected):
    monkeypatch.setattr(precision, "cpu_bf16", lambda: isa)
    on, why = precision.choose("auto", Sized(n, dtype))
    assert on is expected and why


def test_this_cpu_is_read_from_proc():
    flags = open("/proc/cpuinfo").read()
    expected = "AMX" if "amx_bf16" in flags else "AVX512-BF16" if "avx512_bf16" in flags else None
    assert precision.cpu_bf16() == expected


def test_autocast_runs_matmuls_in_bf16_and_leaves_weights_fp32():
    lin = torch.nn.Linear(4, 4)
    with precision.autocast(True):
        y = lin(torch.ones(1, 4))
    assert y.dtype == torch.bfloat16 and lin.weight.dtype == torch.float32
    with precision.autocast(False):
        assert lin(torch.ones(1, 4)).dtype == torch.float32

