"""`launch` (trainer/distributed.py), the parent of `botgrpo train --num-processes N`, with real
child processes standing in for the ranks: the environment each rank gets, its output on ours, the
first failure's exit code, and the other ranks asked to save (SIGTERM) before it returns."""

from __future__ import annotations

import sys

from botgrpo_cli.trainer.distributed import launch

# A rank: says who it is. `done`: exits 0. `fail R DIR`: the others mark DIR/ready-N once they
# save on SIGTERM and then wait; rank R exits 3 once every other rank is ready.
RANK = r"""
import os, pathlib, signal, sys, time
def stop(signum, frame):
    print(f"rank {rank} saved", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
print(f"rank {rank} of {world} at {os.environ['MASTER_ADDR']}", flush=True)
if sys.argv[1] == "fail":
    marks = pathlib.Path(sys.argv[3])
    if rank != int(sys.argv[2]):
        (marks / f"ready-{rank}").touch()
        time.sleep(60)
    while len(list(marks.glob("ready-*"))) < world - 1:
        time.sleep(0.02)
    sys.exit(3)
"""
PROGRAM = [sys.executable, "-c", RANK]


def test_every_rank_gets_its_place_and_writes_on_our_stdout(capfd):
    assert launch(3, ["done"], program=PROGRAM) == 0
    out = capfd.readouterr().out.splitlines()
    assert sorted(out) == [f"rank {r} of 3 at 127.0.0.1" for r in range(3)]


def test_the_first_failure_is_returned_and_the_other_ranks_save(capfd, tmp_path):
    assert launch(2, ["fail", "1", str(tmp_path)], program=PROGRAM) == 3
    out = capfd.readouterr().out.splitlines()
    assert "rank 0 saved" in out and "rank 1 saved" not in out  # nothing of rank 0's work is lost
