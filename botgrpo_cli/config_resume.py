"""`--resume` continues a run with the configuration it was started with.

The run's config.yaml is the base. A value given on the command line (YAML file, `--set`, `--algo`,
`--steps`, `--out`) that differs from it is refused with the list of differences, except the few
that may change between sessions of one run (RESUME_MAY_CHANGE).
"""

from __future__ import annotations

from pathlib import Path

from botgrpo_cli.config import Config, explicit_values, from_values
from botgrpo_cli.errors import UserError
from botgrpo_cli.redact import REDACTED

RESUME_MAY_CHANGE = ("run.steps", "run.out_dir", "run.threads", "run.fail_on", "reward.workers", "log.*")


def _has_redacted(value) -> bool:
    if isinstance(value, dict):
        return any(_has_redacted(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_redacted(v) for v in value)
    return isinstance(value, str) and REDACTED in value


def _may_change(dotted: str) -> bool:
    return any(dotted == a or (a.endswith(".*") and dotted.startswith(a[:-1])) for a in RESUME_MAY_CHANGE)


def resume_config(run_dir: Path, given: dict) -> Config:
    """The saved config of `run_dir` with the allowed `given` values ({section: {key: value}}) over it."""
    saved_path = run_dir / "config.yaml"
    if not saved_path.is_file():
        raise UserError(f"--resume: {saved_path} is missing, so the run's settings are unknown; start a new run")
    saved = explicit_values(saved_path)
    merged = {section: dict(values) for section, values in saved.items()}
    differences, missing = [], []
    for section, values in given.items():
        for key, value in values.items():
            dotted, old = f"{section}.{key}", saved.get(section, {}).get(key)
            if _has_redacted(old) or value == old:
                merged.setdefault(section, {})[key] = value  # a secret is given again: use it
            elif _may_change(dotted):
                merged.setdefault(section, {})[key] = value
            else:
                differences.append(f"{dotted}: run has {old!r}, command line gives {value!r}")
    for section, values in saved.items():
        missing += [f"{section}.{k}" for k, v in values.items() if _has_redacted(v) and k not in given.get(section, {})]
    if differences:
        raise UserError(f"--resume continues {run_dir} with its own settings; the command line differs in "
                        f"{'; '.join(differences)}. Drop those values (only {', '.join(RESUME_MAY_CHANGE)} may "
                        "change) or start a new run with another --out")
    if missing:
        raise UserError(f"--resume: {saved_path} holds redacted secrets ({', '.join(missing)}); give them again "
                        "with --set")
    return from_values(merged)
