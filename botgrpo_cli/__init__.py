"""botgrpo: reinforcement learning for language models with token-level rewards."""

import os as _os

__version__ = "0.1.0"

# OpenMP (torch's CPU threads) keeps a thread that ran out of work spinning for milliseconds before
# it sleeps. When the cores are shared (reward services scoring while we generate, other jobs), the
# spinners hold the cores the working threads need: 2-thread generation ran 10-60x slower at load 10
# on 2 cores. PASSIVE sleeps at once. libgomp reads this when torch loads it, hence here, before
# any torch import; a policy or spin count the user set wins. See README, "Rollouts and precision".
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
