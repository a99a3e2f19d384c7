"""The cache's build lock: two processes building one entry take turns, and no lock file is left
beside the entry or in a user's --out directory."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from botgrpo_base.cache import atomic_dir, lock_file, one_builder


def _build(final: str, log: str) -> None:
    with one_builder(Path(final)):
        with open(log, "a") as f:
            f.write("start\n")
        time.sleep(0.3)
        with open(log, "a") as f:
            f.write("end\n")


def test_two_builders_take_turns(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path / "cache"))
    final, log = tmp_path / "out" / "entry", tmp_path / "log"
    ctx = multiprocessing.get_context("spawn")  # a fresh process, as a second `botgrpo` would be
    procs = [ctx.Process(target=_build, args=(str(final), str(log))) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert log.read_text().split() == ["start", "end", "start", "end"]  # never interleaved


def test_no_lock_beside_the_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path / "cache"))
    final = tmp_path / "out" / "entry"
    with one_builder(final), atomic_dir(final) as tmp:
        (tmp / "weights").write_text("x")
    assert sorted(p.name for p in final.parent.iterdir()) == ["entry"]
    assert lock_file(final).is_file() and lock_file(final).parent == tmp_path / "cache" / "locks"


def test_lock_is_per_entry_path(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path / "cache"))
    assert lock_file(tmp_path / "a" / "entry") != lock_file(tmp_path / "b" / "entry")
    assert lock_file(tmp_path / "a" / "entry") == lock_file(tmp_path / "a" / ".." / "a" / "entry")
