"""Atomic, durable checkpoints (temp dir, fsync, rename), keep the last K, exact resume.

Contents: model (HF format, safetensors) + tokenizer, optimizer + scheduler (optim.pt), RNG states
(rng.pt: python, numpy, torch), data position and step (state.json), the resolved config (secrets
redacted). The .pt files hold only tensors and plain containers and are read with
`torch.load(weights_only=True)`: a checkpoint file cannot run code.

Every save records the SHA-256 of each of its files in checksums.json (written last). On resume the
newest checkpoint is checked: every file matches its checksum (weights zeroed at the same size, an
edited state.json), the weights are finite, state.json agrees with the folder's step, JSON parses,
safetensors sizes match their headers, .pt files load. A damaged one is skipped with a one-line
warning for the newest intact one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from botgrpo_cli import rundir
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.nonfinite import nonfinite_tensors, optimizer_tensors

PREFIX = rundir.STEP_PREFIX
CHECKSUMS = "checksums.json"


@dataclass
class TrainState:
    step: int  # steps completed
    data_position: int  # prompts drawn from the training stream
    entropy: dict | None = None  # the adaptive entropy controller's {coef, last_entropy} (trainer/controls.py)


class DamagedCheckpoint(Exception):
    """A checkpoint that cannot be resumed from; the message says which file and why."""


@dataclass
class Loaded:
    """A checked checkpoint, its small files already read."""

    path: Path
    state: TrainState
    optim: dict
    rng: dict


def save(run_dir: Path, state: TrainState, model: Any, tokenizer: Any, opt: Any, sched: Any,
         cfg_yaml: str, keep_last: int, weights: dict | None = None, optim_state: dict | None = None) -> Path:
    """Write checkpoints/step-N atomically and drop all but the newest `keep_last`.
    weights, optim_state: the model's and the optimizer's full state dicts when their own are sharded
    (FSDP); opt None: no optimizer state. A disk or permission error is a UserError naming the last
    good checkpoint."""
    root = run_dir / "checkpoints"
    final = path_of(run_dir, state.step)
    tmp = root / f".tmp-{final.name}"
    _refuse_nonfinite(run_dir, final, model, weights, opt, optim_state)
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        model.save_pretrained(tmp / "model", state_dict=weights)
        tokenizer.save_pretrained(tmp / "model")
        if opt is not None:
            optim = opt.state_dict() if optim_state is None else optim_state
            torch.save({"optimizer": optim, "scheduler": sched.state_dict()}, tmp / "optim.pt")
        torch.save(rng_state(), tmp / "rng.pt")
        (tmp / "state.json").write_text(json.dumps({k: v for k, v in state.__dict__.items() if v is not None}))
        (tmp / "config.yaml").write_text(cfg_yaml)
        (tmp / CHECKSUMS).write_text(json.dumps(_checksums(tmp), indent=0, sort_keys=True))
        _fsync_tree(tmp)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        _fsync(root)
        for old in checkpoints(run_dir)[:-keep_last]:
            shutil.rmtree(old)
    except (OSError, RuntimeError) as err:  # torch.save reports a full disk as a RuntimeError
        shutil.rmtree(tmp, ignore_errors=True)
        good = [p for p in checkpoints(run_dir) if p != final]
        last = f"the last good checkpoint is {good[-1]}" if good else "no checkpoint was written before"
        reason = getattr(err, "strerror", None) or (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UserError(f"could not write checkpoint {final}: {reason}; {last}. Free disk space or "
                        f"fix permissions, then continue with `botgrpo train --resume --out {run_dir}`") from None
    return final


def _refuse_nonfinite(run_dir: Path, final: Path, model: Any, weights: dict | None, opt: Any,
                      optim_state: dict | None) -> None:
    """UserError, before anything is written, when the weights or the optimizer's moments hold a NaN
    or an infinity: such a checkpoint could only spread the damage on resume (trainer/nonfinite.py)."""
    named = list((weights if weights is not None else model.state_dict()).items())
    if opt is not None:
        named += optimizer_tensors(opt.state_dict() if optim_state is None else optim_state)
    bad = nonfinite_tensors(named)
    if bad:
        good = checkpoints(run_dir)
        last = (f"the last good checkpoint is {good[-1]}; lower optim.lr or check the reward, then continue with "
                "--resume") if good else "no checkpoint was written before; lower optim.lr or check the reward"
        raise UserError(f"not writing checkpoint {final}: NaN or infinite values in {len(bad)} tensors "
                        f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}); {last}")


def path_of(run_dir: Path, step: int) -> Path:
    """Where the checkpoint of `step` lives (whether or not it exists)."""
    return run_dir / "checkpoints" / f"{PREFIX}{step:06d}"


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temp dirs of an interrupted save are ignored)."""
    return rundir.checkpoint_dirs(run_dir)


def latest(run_dir: Path) -> Path | None:
    found = checkpoints(run_dir)
    return found[-1] if found else None


def read(ckpt: Path) -> Loaded:
    """Check every file of a checkpoint and read its small ones; raises DamagedCheckpoint."""
    _check_model(ckpt / "model")
    try:
        raw = json.loads((ckpt / "state.json").read_text())
        state = TrainState(step=int(raw["step"]), data_position=int(raw["data_position"]), entropy=raw.get("entropy"))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DamagedCheckpoint(f"state.json is unreadable ({type(err).__name__}: {err})") from None
    if state.step != rundir.checkpoint_step(ckpt) or state.data_position < 0:
        raise DamagedCheckpoint(f"state.json says step {state.step}, data position {state.data_position}: "
                                f"not the state of {ckpt.name}")
    _verify_checksums(ckpt)
    _check_finite(ckpt / "model")
    return Loaded(ckpt, state, _load_pt(ckpt / "optim.pt"), _load_pt(ckpt / "rng.pt"))


def latest_intact(run_dir: Path, warn: Callable[[str], None]) -> Loaded | None:
    """The newest checkpoint that passes `read`, with one warning line naming the newer damaged ones.
    None when there is none at all; UserError when every one is damaged."""
    found = checkpoints(run_dir)
    problems = []
    for ckpt in reversed(found):
        try:
            loaded = read(ckpt)
        except DamagedCheckpoint as err:
            problems.append(f"{ckpt.name}: {err}")
            continue
        if problems:
            warn(f"checkpoint {'; '.join(problems)}; resuming from {ckpt.name}, the newest intact one")
        return loaded
    if found:
        raise UserError(f"no intact checkpoint in {run_dir / 'checkpoints'} ({'; '.join(problems)}); "
                        "start a new run with another --out")
    return None


def restore(loaded: Loaded, opt: Any, sched: Any, load_optimizer: Callable[[dict], None] | None = None) -> TrainState:
    """Load optimizer, scheduler and RNG states (the model is loaded from path/model by the caller).
    load_optimizer: how the optimizer takes its saved state when it is sharded (FSDP)."""
    try:
        (load_optimizer or opt.load_state_dict)(loaded.optim["optimizer"])
        sched.load_state_dict(loaded.optim["scheduler"])
        set_rng_state(loaded.rng)
    except (KeyError, ValueError, TypeError, RuntimeError) as err:
        raise UserError(f"checkpoint {loaded.path} does not fit this run's model/optimizer ({type(err).__name__}: "
                        f"{err}); resume with the run's own settings or start a new run") from None
    return loaded.state


# ---------------------------------------------------------------------------- files


def rng_state() -> dict:
    """Python, numpy and torch random states, as saved in rng.pt."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "torch": torch.get_rng_state(),
            "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                      "has_gauss": int(has_gauss), "gauss": float(gauss)}}


def set_rng_state(rng: dict) -> None:
    n = rng["numpy"]
    random.setstate(_tuples(rng["python"]))
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    torch.set_rng_state(rng["torch"])


def _tuples(obj: Any) -> Any:
    return tuple(_tuples(x) for x in obj) if isinstance(obj, (list, tuple)) else obj


def _load_pt(path: Path) -> dict:
    try:
        obj = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # truncated, empty, not a torch file, or holding code: all mean damaged
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise DamagedCheckpoint(f"{path.name} is unreadable ({type(err).__name__}: {first})") from None
    if not isinstance(obj, dict):
        raise DamagedCheckpoint(f"{path.name} does not hold a state dict")
    return obj


def _check_model(model_dir: Path) -> None:
    """Every JSON file parses and every safetensors file is as long as its header says."""
    if not model_dir.is_dir():
        raise DamagedCheckpoint("the model/ folder is missing")
    tensors = list(model_dir.glob("*.safetensors"))
    if not tensors:
        raise DamagedCheckpoint("model/ holds no .safetensors weights")
    for path in sorted(model_dir.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise DamagedCheckpoint(f"model/{path.name} is unreadable ({type(err).__name__})") from None
    for path in tensors:
        _check_safetensors(path)


def _check_safetensors(path: Path) -> None:
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size:
                raise ValueError("header longer than the file")
            header = json.loads(f.read(n))
        end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    except (OSError, ValueError, struct.error, KeyError, TypeError, IndexError) as err:
        raise DamagedCheckpoint(f"model/{path.name} has no valid header ({type(err).__name__})") from None
    if size != 8 + n + end:
        raise DamagedCheckpoint(f"model/{path.name} is {size} bytes, its header says {8 + n + end} (truncated?)")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checksums(root: Path) -> dict[str, str]:
    """{path relative to root: sha256} of every file under root."""
    return {p.relative_to(root).as_posix(): _sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _verify_checksums(ckpt: Path) -> None:
    """Every file recorded at save is there, unchanged; no file was added to model/."""
    try:
        recorded = json.loads((ckpt / CHECKSUMS).read_text())
        if not isinstance(recorded, dict):
            raise ValueError("not a mapping")
    except (OSError, ValueError) as err:
        raise DamagedCheckpoint(f"{CHECKSUMS} is missing or unreadable ({type(err).__name__}), so its files "
                                "cannot be verified") from None
    actual = _checksums(ckpt)
    actual.pop(CHECKSUMS, None)
    changed = sorted(name for name in recorded if actual.get(name) != recorded[name])
    added = sorted(name for name in actual if name not in recorded)
    if changed or added:
        what = [f"{n} {'is missing' if n not in actual else 'differs from its checksum'}" for n in changed]
        raise DamagedCheckpoint("; ".join(what + [f"{n} was not saved with it" for n in added]))


def _check_finite(model_dir: Path) -> None:
    """No NaN or infinite weight (a run that diverged, or a damaged file with a fitting checksum)."""
    from safetensors import safe_open

    for path in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    bad = int((~torch.isfinite(t)).sum())
                    raise DamagedCheckpoint(f"model/{path.name}: {name} holds {bad} NaN or infinite values "
                                            f"({bad / max(1, t.numel()):.0%} of it)")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Flush every file and folder under root to disk, so a rename never publishes half-written data."""
    for folder, _, files in os.walk(root):
        for name in files:
            _fsync(Path(folder) / name)
        _fsync(Path(folder))
