"""A reward service whose backend cannot start exits 1 with one line on stderr, not a traceback:
the real render service pointed at a Chromium that cannot be executed, as a real process."""

from __future__ import annotations

import os
import subprocess
import sys


def test_render_service_with_an_unusable_chromium_fails_in_one_line(tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o644)  # not executable: launching it fails with EACCES, even as root
    proc = subprocess.run(
        [sys.executable, "-m", "botgrpo_rewards", "render"], stdin=subprocess.DEVNULL, capture_output=True,
        text=True, env={**os.environ, "BOTGRPO_CHROMIUM": str(fake)}, timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: reward service 'render' could not start: ") and str(fake) in lines[0]
