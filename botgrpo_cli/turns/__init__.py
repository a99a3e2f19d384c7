"""Multi-turn rollouts' parts: tool calls read from model turns, tools run in worker processes,
environments, and messages appended through the chat template (the driver: rollout/turns.py).
Light to import: the tool worker process starts from here without torch."""
