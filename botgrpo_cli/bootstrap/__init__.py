"""`botgrpo bootstrap`: build a tiny local model for a task (own tokenizer, Qwen2-style model, SFT).

    from botgrpo_cli.bootstrap import bootstrap
    model_dir = bootstrap("react_synth")  # cached under $BOTGRPO_CACHE or ~/.cache/botgrpo
"""

from __future__ import annotations

from botgrpo_cli.bootstrap.build import BUILD_VERSION, RECIPES, bootstrap, describe, read_info

__all__ = ["BUILD_VERSION", "RECIPES", "bootstrap", "describe", "read_info"]
