"""Service names -> backend classes, imported lazily so each service loads only what it needs."""

from __future__ import annotations

import importlib

SERVICES = {
    "math": "botgrpo_rewards.math.service:MathBackend",
    "react": "botgrpo_rewards.react.service:ReactBackend",
    "render": "botgrpo_rewards.render.service:RenderBackend",
}


def load_backend(name: str, **kwargs):
    """Instantiate the backend called `name`. Raises KeyError naming the known services."""
    if name not in SERVICES:
        raise KeyError(f"unknown reward service {name!r}; known: {', '.join(sorted(SERVICES))}")
    module, _, cls = SERVICES[name].partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
