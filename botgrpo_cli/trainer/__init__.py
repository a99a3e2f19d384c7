"""The trainer: policy loading, the loop, checkpoints and metrics."""

from botgrpo_cli.trainer.loop import TrainResult, train

__all__ = ["TrainResult", "train"]
