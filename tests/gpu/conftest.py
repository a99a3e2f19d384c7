"""GPU tests: every test here is marked `gpu` and skipped unless CUDA and vLLM are present.
scripts/gpu_check.sh builds the environment they need and runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    import torch

    reason = None
    if not torch.cuda.is_available():
        reason = "needs a CUDA GPU (run scripts/gpu_check.sh on a GPU machine)"
    else:
        try:
            import vllm  # noqa: F401
        except ImportError:
            reason = "needs vLLM: pip install 'botgrpo[vllm]' (scripts/gpu_check.sh does it in its own venv)"
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gpu)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
