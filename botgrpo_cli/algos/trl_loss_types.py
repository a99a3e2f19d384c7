"""TRL 1.16 GRPOConfig's loss fields -> AlgoConfig field values (docs/algorithms.md §3, docs/from-trl.md).

Pure: a mapping of GRPOConfig field names to values in, AlgoConfig values and the TRL names read out.
A field absent from the mapping takes TRL's default. What botgrpo cannot express is one UserError.
"""

from __future__ import annotations

from typing import Any, Mapping

from botgrpo_cli.errors import UserError

# TRL 1.16's defaults of the fields read here (trl/trainer/grpo_config.py).
TRL_DEFAULTS: dict[str, Any] = {
    "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": None, "delta": None, "beta": 0.0,
    "use_bias_correction_kl": True, "importance_sampling_level": "token", "scale_rewards": "group",
    "sapo_temperature_pos": 1.0, "sapo_temperature_neg": 1.05,
    "vespo_k_pos": 2.0, "vespo_lambda_pos": 3.0, "vespo_k_neg": 3.0, "vespo_lambda_neg": 2.0,
    "top_entropy_quantile": 1.0, "off_policy_mask_threshold": None, "mask_truncated_completions": False,
    "multi_objective_aggregation": "sum_then_normalize",
}

# loss_type -> (algo.loss at token level, algo.loss_agg). luspo's ratio is the sequence's (gspo) when
# importance_sampling_level="sequence", as its paper and TRL's warning ask.
_LOSS_TYPES: dict[str, tuple[str, str]] = {
    "grpo": ("clip", "seq_mean_token_mean"),
    "dr_grpo": ("clip", "seq_mean_token_sum_norm"),
    "dapo": ("clip", "dapo"),
    "bnpo": ("clip", "bnpo"),
    "luspo": ("clip", "seq_mean_token_sum"),
    "cispo": ("cispo", "dapo"),
    "sapo": ("sapo", "seq_mean_token_mean"),
    "vespo": ("vespo", "dapo"),
}
_CLIPPED = ("clip", "gspo")  # the losses that read epsilon, epsilon_high and delta
_SCALES = {True: "group", False: "none", "group": "group", "batch": "batch", "none": "none"}


def algo_fields(trl: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """AlgoConfig values for GRPOConfig's loss fields in `trl` (field name -> value), and the names read.

    Returns e.g. ({"loss": "clip", "loss_agg": "dapo", "loss_options": {...}, "advantage_options":
    {"scale": "group"}, "beta": 0.0, ...}, {"loss_type", ...}); UserError (one line) for a combination
    botgrpo has no counterpart for.
    """
    v = {**TRL_DEFAULTS, **{k: trl[k] for k in TRL_DEFAULTS if k in trl}}
    loss_type, level = v["loss_type"], v["importance_sampling_level"]
    if loss_type not in _LOSS_TYPES:
        raise UserError(f"GRPOConfig loss_type={loss_type!r} is not one TRL 1.16 defines; use one of "
                        f"{', '.join(_LOSS_TYPES)}")
    if level not in ("token", "sequence"):
        raise UserError(f"GRPOConfig importance_sampling_level={level!r} must be 'token' or 'sequence'")
    loss, loss_agg = _LOSS_TYPES[loss_type]
    if level == "sequence":
        if loss not in _CLIPPED:
            raise UserError(f"GRPOConfig importance_sampling_level='sequence' with loss_type={loss_type!r} has no "
                            f"counterpart here: {loss_type} runs on token ratios; use importance_sampling_level="
                            f"'token', or a clipped loss_type (grpo, dapo, bnpo, dr_grpo, luspo) for GSPO's ratio")
        loss = "gspo"
    out: dict[str, Any] = {"loss": loss, "loss_agg": loss_agg, "loss_options": _loss_options(loss, v)}
    scale = v["scale_rewards"]
    if scale not in _SCALES:
        raise UserError(f"GRPOConfig scale_rewards={scale!r} must be 'group', 'batch', 'none', True or False")
    out["advantage_options"] = {"scale": _SCALES[scale]}
    if v["multi_objective_aggregation"] not in ("sum_then_normalize", "normalize_then_sum"):
        raise UserError(f"GRPOConfig multi_objective_aggregation={v['multi_objective_aggregation']!r} must be "
                        f"'sum_then_normalize' or 'normalize_then_sum'")
    if v["multi_objective_aggregation"] == "normalize_then_sum":
        out["advantage_options"] = {"scale": "batch"}  # TRL's GDPO ignores scale_rewards: one batch std
    out["reward_aggregation"] = v["multi_objective_aggregation"]
    out["beta"] = float(v["beta"])
    out["kl_bias_correction"] = bool(v["use_bias_correction_kl"]) and out["beta"] > 0
    out["top_entropy_quantile"] = float(v["top_entropy_quantile"])
    out["off_policy_mask"] = None if v["off_policy_mask_threshold"] is None else float(v["off_policy_mask_threshold"])
    out["mask_truncated"] = bool(v["mask_truncated_completions"])
    return out, {k for k in TRL_DEFAULTS if k in trl}


def _loss_options(loss: str, v: Mapping[str, Any]) -> dict[str, Any]:
    """The loss's options from TRL's epsilon, epsilon_high (None: epsilon), delta and sapo_*/vespo_* fields.
    TRL ignores the fields a loss_type does not read; so does this."""
    eps_high = v["epsilon"] if v["epsilon_high"] is None else v["epsilon_high"]
    if loss in _CLIPPED:
        options = {"eps_low": float(v["epsilon"]), "eps_high": float(eps_high)}
        if v["delta"] is not None:
            if not v["delta"] > 0:
                raise UserError(f"GRPOConfig delta={v['delta']!r} must be > 0 (TRL recommends > 1 + epsilon) or None")
            options["delta"] = float(v["delta"])
        return options
    if loss == "cispo":
        return {"eps_high": float(eps_high)}
    if loss == "sapo":
        return {"temperature_pos": float(v["sapo_temperature_pos"]),
                "temperature_neg": float(v["sapo_temperature_neg"])}
    return {key: float(v[f"vespo_{key}"]) for key in ("k_pos", "lambda_pos", "k_neg", "lambda_neg")}
