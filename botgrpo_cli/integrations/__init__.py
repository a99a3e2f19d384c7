"""Adapters for other trainers (see docs/integrations.md).

`botgrpo_cli.integrations.trl`: `reward_function` (a reward service as a TRL reward function) and
`BoTGRPOTrainer` (TRL's GRPOTrainer with BoT-GRPO token advantages). `botgrpo_cli.integrations.verl`:
the `bot_grpo` advantage estimator and the `botgrpo` dense reward manager, registered with verl on
import. Import the submodule you need; this package imports neither TRL nor verl.
"""
