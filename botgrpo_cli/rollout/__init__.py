"""Rollout engines: sample completions with token ids and exact character offsets."""

from botgrpo_cli.rollout.base import Engine, RolloutBatch, SamplingParams, concat
from botgrpo_cli.rollout.hf import HFEngine
from botgrpo_cli.rollout.offsets import OffsetDecoder

__all__ = ["Engine", "HFEngine", "OffsetDecoder", "RolloutBatch", "SamplingParams", "concat"]
