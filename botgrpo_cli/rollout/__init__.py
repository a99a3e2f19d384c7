"""Rollout engines: sample completions with token ids and exact character offsets."""

from botgrpo_cli.rollout.base import Engine, RolloutBatch, SamplingParams, concat
from botgrpo_cli.rollout.fast import FastEngine
from botgrpo_cli.rollout.hf import HFEngine
from botgrpo_cli.rollout.offsets import OffsetDecoder

__all__ = ["Engine", "FastEngine", "HFEngine", "OffsetDecoder", "RolloutBatch", "SamplingParams", "concat"]
