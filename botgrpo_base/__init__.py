"""What the client (botgrpo_cli) and the reward services (botgrpo_rewards) both stand on, and nothing
of either: child processes speaking lines (child.py: LineChild, which every service pool, checker,
compiler and the trainer's ranks run on) and the one plugin rule of every registry (plugins.py).
It imports nothing else of the project, so the pure algorithms and the trainer can use it without
importing the services, and the services without importing the trainer."""
