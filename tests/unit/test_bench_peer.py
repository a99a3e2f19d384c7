"""`bench step --vs trl --shape`: the shape option."""

from __future__ import annotations

import pytest


def test_peer_bench_shape_parses_and_refuses_nonsense():
    from botgrpo_cli.bench.peer_trl import Shape
    from botgrpo_cli.errors import UserError

    assert Shape.parse("2x4x128") == Shape(2, 4, 128) and str(Shape()) == "8x8x48"
    for bad in ("8x8", "8x1x48", "ax8x48", "0x8x48"):
        with pytest.raises(UserError):
            Shape.parse(bad)
