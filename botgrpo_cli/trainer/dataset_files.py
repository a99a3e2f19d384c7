"""A dataset given from Python (`datasets.Dataset`, `IterableDataset`, a list of rows) as a file the
`prompts` task reads: written once, by its content, under $BOTGRPO_CACHE/datasets/, so the run's
config.yaml names a file that `botgrpo eval` and a resume can read again."""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

from botgrpo_cli.bootstrap.cache import cache_root
from botgrpo_cli.errors import UserError


def dataset_path(data: Any, what: str, stream_rows: int) -> str:
    """Where the `prompts` task finds `data`: a path or Hub id as it is; a Dataset, a list of row
    dicts or the first `stream_rows` rows of an IterableDataset written as Parquet."""
    import datasets

    if isinstance(data, (str, os.PathLike)):
        return str(data)
    if isinstance(data, datasets.IterableDataset):
        data = list(itertools.islice(data, stream_rows))
    if isinstance(data, list):
        if not all(isinstance(row, dict) for row in data):
            raise UserError(f"{what}: a list must hold one dict per row ({{'prompt': ...}}), as TRL's datasets do")
        data = datasets.Dataset.from_list(data)
    if isinstance(data, datasets.DatasetDict):
        raise UserError(f"{what} is a DatasetDict: pass one split, e.g. {what}=dataset['train']")
    if not isinstance(data, datasets.Dataset):
        raise UserError(f"{what} must be a datasets.Dataset or IterableDataset, a list of row dicts, a file path or "
                        f"a Hugging Face dataset id; got {type(data).__name__}")
    if len(data) == 0:
        raise UserError(f"{what} has no rows; give it rows with a 'prompt' column")
    if "prompt" not in data.column_names:
        raise UserError(f"{what} has no 'prompt' column (its columns: {', '.join(data.column_names)}); TRL's datasets "
                        f"put the prompt in 'prompt': rename yours, e.g. {what}.rename_column('question', 'prompt')")
    return str(_written(data))


def _written(data: Any) -> Path:
    """The dataset as Parquet, named by the SHA-256 of the file (the same rows are written once)."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    folder = cache_root() / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".parquet", dir=folder)
    os.close(fd)
    quiet = are_progress_bars_disabled()
    disable_progress_bars()  # a bar for writing a few rows says nothing
    try:
        data.to_parquet(tmp)
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()[:16]
        final = folder / f"{digest}.parquet"
        os.replace(tmp, final)  # atomic: a reader never sees half a file
        return final
    finally:
        Path(tmp).unlink(missing_ok=True)
        if not quiet:
            enable_progress_bars()
