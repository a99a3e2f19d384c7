"""Service names -> backend classes ("module:Class"), imported lazily so each service loads only what
it needs. Registering a service is one line: a built-in one in `_BUILTIN`, one from another package in
its entry-point group `botgrpo.services` (NAME = "module:Class"), as tasks do with `botgrpo.tasks`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

_BUILTIN = {
    "math": "botgrpo_rewards.math.service:MathBackend",
    "react": "botgrpo_rewards.react.service:ReactBackend",
    "render": "botgrpo_rewards.render.service:RenderBackend",
}
# other packages' services, then the built-ins (an installed package cannot shadow a built-in)
SERVICES = {**{ep.name: ep.value for ep in entry_points(group="botgrpo.services")}, **_BUILTIN}


def load_backend(name: str, **kwargs):
    """Instantiate the backend called `name`. Raises KeyError naming the known services."""
    if name not in SERVICES:
        raise KeyError(f"unknown reward service {name!r}; known: {', '.join(sorted(SERVICES))}")
    module, _, cls = SERVICES[name].partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
