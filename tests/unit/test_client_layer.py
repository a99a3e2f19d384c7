"""The client (botgrpo_cli) shares only the protocol (`botgrpo_rewards.protocol`, rewards/protocol/)
with the reward services (docs/INTERFACES.md): it never imports a backend or a service's internals; it
scores through a service process."""

from __future__ import annotations

import ast
from pathlib import Path

import botgrpo_cli
from botgrpo_rewards.registry import SERVICES

CLIENT = Path(botgrpo_cli.__file__).parent
# the backend base class and every registered service's package (math, react, render)
INTERNALS = ("botgrpo_rewards.backend", *sorted({f"botgrpo_rewards.{spec.split('.')[1]}" for spec in SERVICES.values()}))


def _is_internal(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in INTERNALS)


def _internal_references(path: Path) -> list[str]:
    """Modules under INTERNALS that `path` imports, or names in a string (importlib, `python -m`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from botgrpo_rewards.render.service import X` and `from botgrpo_rewards import render`
            found += [node.module] if _is_internal(node.module) else [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [w.strip("`'\".,:;()") for w in node.value.split()]
    return [name for name in found if _is_internal(name)]


def test_the_internals_list_names_every_service():
    assert {"botgrpo_rewards.math", "botgrpo_rewards.react", "botgrpo_rewards.render"} <= set(INTERNALS)


def test_the_check_sees_internal_imports(tmp_path):
    probe = CLIENT / "cli" / "reward_render.py"  # a real client file, checked with leaks added
    bad = tmp_path / "bad.py"
    bad.write_text(probe.read_text(encoding="utf-8") + "\nfrom botgrpo_rewards import render\n"
                   "from botgrpo_rewards.render.service import RenderBackend\nimport botgrpo_rewards.math.pool\n"
                   "MODULE = 'botgrpo_rewards.react.checker'\n", encoding="utf-8")
    assert _internal_references(bad) == ["botgrpo_rewards.render", "botgrpo_rewards.render.service",
                                         "botgrpo_rewards.math.pool", "botgrpo_rewards.react.checker"]


def test_the_client_imports_no_backend_internals():
    leaks = [f"{path.relative_to(CLIENT.parent)}: {name}"
             for path in sorted(CLIENT.rglob("*.py")) for name in _internal_references(path)]
    assert leaks == [], "botgrpo_cli must score through a service process, not import its internals: " + ", ".join(leaks)
