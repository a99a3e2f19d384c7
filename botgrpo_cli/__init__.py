"""botgrpo: reinforcement learning for language models with token-level rewards."""

__version__ = "0.1.0"
