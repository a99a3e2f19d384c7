"""Layers over every package of the project (botgrpo_base, botgrpo_cli, botgrpo_rewards, botgrpo_tasks), from
the source: no module imports itself back through others, and the one-way rules below
(`violations`) hold; docs/INTERFACES.md names the parts. Imports inside functions count; `if TYPE_CHECKING:`
blocks (never run) do not."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import botgrpo_base
import botgrpo_cli
import botgrpo_rewards
import botgrpo_tasks

ROOTS = {pkg.__name__: Path(pkg.__file__).parent for pkg in (botgrpo_base, botgrpo_cli, botgrpo_rewards, botgrpo_tasks)}


def _name(pkg: str, root: Path, path: Path) -> str:
    parts = [pkg, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_name(pkg, root, p): p for pkg, root in ROOTS.items() for p in sorted(root.rglob("*.py"))}


def _imported(path: Path, module: str, modules: dict[str, Path]) -> set[str]:
    """The project modules `module` imports (resolved to the deepest existing module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
              and node.test.id == "TYPE_CHECKING" for stmt in node.body for n in ast.walk(stmt)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            names += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imported(p, m, modules) for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Edges the one-way rules forbid, as 'importer -> imported (rule)'."""
    def within(*packages: str):
        return lambda m: _in(m, *packages)

    def outside(*packages: str):
        return lambda m: not _in(m, *packages)

    base, client, services, tasks = "botgrpo_base", "botgrpo_cli", "botgrpo_rewards", "botgrpo_tasks"
    rules = [  # (rule, importer, forbidden import)
        ("the shared base imports nothing else of the project", within(base), outside(base)),
        ("services never import the client or the tasks", within(services), within(client, tasks)),
        ("the protocol imports only itself and the base", within(f"{services}.protocol"),
         outside(f"{services}.protocol", base)),
        ("tasks import only the protocol and the base", within(tasks), outside(tasks, f"{services}.protocol", base)),
        ("trainer -> evaluation is one-way", within(f"{client}.evaluation"), within(f"{client}.trainer")),
        ("model loading sits below trainer, evaluation and bootstrap", within(f"{client}.models"),
         within(f"{client}.trainer", f"{client}.evaluation", f"{client}.bootstrap")),
        ("the math is pure tensor functions", within(f"{client}.algos"),
         outside(f"{client}.algos", f"{client}.errors", base)),
        ("only the command line imports the command line", outside(f"{client}.cli", f"{client}.__main__"),
         within(f"{client}.cli")),
        ("no package's entry script is imported", lambda m: True,
         lambda m: m.endswith(".__main__")),
    ]
    return [f"{a} -> {b} ({rule})" for rule, importer, forbidden in rules for a in sorted(graph) if importer(a)
            for b in sorted(graph[a]) if forbidden(b)]


def test_the_scan_covers_every_package_and_sees_lazy_imports():
    graph = import_graph()
    assert {m.split(".")[0] for m in graph} == set(ROOTS)
    assert "botgrpo_cli.evaluation.sampling" in graph["botgrpo_cli.trainer.loop"]
    assert "botgrpo_cli.config_checks" in graph["botgrpo_cli.config"]  # a module-level import
    assert "botgrpo_cli.trainer" in graph["botgrpo_cli.cli.train"]  # an import inside a function


def test_the_checks_catch_a_cycle_and_a_forbidden_edge():
    graph = {k: set(v) for k, v in import_graph().items()}
    graph["botgrpo_cli.config_checks"].add("botgrpo_cli.config")  # the circle this test once allowed
    graph["botgrpo_cli.evaluation.models"].add("botgrpo_cli.trainer.policy")
    assert ["botgrpo_cli.config", "botgrpo_cli.config_checks"] in cycles(graph)
    assert ("botgrpo_cli.evaluation.models -> botgrpo_cli.trainer.policy (trainer -> evaluation is one-way)"
            in violations(graph))
    graph["botgrpo_cli.algos.registry"].add("botgrpo_rewards.protocol")  # the edge the shared base removed
    assert ("botgrpo_cli.algos.registry -> botgrpo_rewards.protocol (the math is pure tensor functions)"
            in violations(graph))
    graph["botgrpo_cli.cli.reward"].add("botgrpo_rewards.__main__")
    assert ("botgrpo_cli.cli.reward -> botgrpo_rewards.__main__ (no package's entry script is imported)"
            in violations(graph))
    graph["botgrpo_cli.models.gguf"].add("botgrpo_cli.bootstrap.cache")  # the loop models -> bootstrap -> evaluation
    assert ("botgrpo_cli.models.gguf -> botgrpo_cli.bootstrap.cache (model loading sits below trainer, evaluation "
            "and bootstrap)" in violations(graph))


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_one_way_layers():
    assert violations(import_graph()) == []


def test_the_product_names_no_experiment():
    """Our result sets and plans belong to research/ (research/pages makes their pages): a file the
    packages ship never names one."""
    names = ("arith31", "react31", "convergence16", "preregistration/")
    found = [f"{path}: {name}" for root in ROOTS.values() for path in sorted(root.rglob("*"))
             if path.is_file() and "node_modules" not in path.parts and path.suffix in (".py", ".md", ".js")
             for name in names if name in path.read_text(encoding="utf-8")]
    assert not found, found


def test_the_product_carries_no_test_material():
    """The math checker's graded tables and other projects' test cases are test data (tests/data,
    tests/fixtures): no module the packages ship holds or reads them."""
    names = ("math_verify_core", "hendrycks_math", "peer_rows", "tests/fixtures", "tests/data")
    found = [f"{path}: {name}" for root in ROOTS.values() for path in sorted(root.rglob("*.py"))
             for name in names if name in path.read_text(encoding="utf-8")]
    assert not found, found
