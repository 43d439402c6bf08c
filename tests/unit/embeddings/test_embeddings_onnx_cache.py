"""The on-disk cache of built ONNX graphs: reuse, corruption, unwritable directories."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from memvault.embeddings import CACHE_DIR_ENV, OnnxMiniLMEmbedder, default_cache_dir
from memvault.embeddings.minilm_onnx import GRAPH_VERSION


def _events(caplog: pytest.LogCaptureFixture, prefix: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(prefix)]


def test_default_cache_dir_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "/somewhere/models")
    assert default_cache_dir() == Path("/somewhere/models")
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert default_cache_dir() == Path("/xdg/memvault/models")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "memvault" / "models"


def test_cache_file_is_named_by_weights_and_graph_version(
    onnx_int8: OnnxMiniLMEmbedder, onnx_fp32: OnnxMiniLMEmbedder, model_cache_dir: Path
) -> None:
    assert onnx_int8.model_path is not None and onnx_fp32.model_path is not None
    assert onnx_int8.model_path.parent == model_cache_dir
    assert onnx_int8.model_path.name.endswith(f"-g{GRAPH_VERSION}-int8.onnx")
    assert onnx_fp32.model_path.name.endswith(f"-g{GRAPH_VERSION}-fp32.onnx")
    # Same weights fingerprint in both names.
    assert onnx_int8.model_path.name.split("-g")[0] == onnx_fp32.model_path.name.split("-g")[0]
    # The quantised file is much smaller than the float one (int8 MatMul weights).
    assert onnx_int8.model_path.stat().st_size < 0.8 * onnx_fp32.model_path.stat().st_size
    # No temporary files are left behind by the atomic write.
    assert not [p for p in model_cache_dir.iterdir() if p.name.endswith(".tmp")]


def test_second_construction_reuses_the_cached_file(
    onnx_int8: OnnxMiniLMEmbedder, model_cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = onnx_int8.model_path
    assert path is not None
    before = path.stat().st_mtime_ns
    again = OnnxMiniLMEmbedder()  # cache dir from MEMVAULT_CACHE_DIR (set by the conftest)
    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        vector = again.embed_query("reuse the cached graph")
    assert again.model_path == path
    assert path.stat().st_mtime_ns == before
    assert not _events(caplog, "embedder.building_graph")
    np.testing.assert_allclose(vector, onnx_int8.embed_query("reuse the cached graph"), atol=1e-6)


def test_corrupted_cache_file_is_rebuilt(
    onnx_int8: OnnxMiniLMEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert onnx_int8.model_path is not None
    cache = tmp_path / "cache"
    cache.mkdir()
    corrupt = cache / onnx_int8.model_path.name
    # A truncated copy: what a crash mid-write without the atomic rename would leave.
    data = onnx_int8.model_path.read_bytes()
    corrupt.write_bytes(data[: len(data) // 3])
    monkeypatch.setenv(CACHE_DIR_ENV, str(cache))
    embedder = OnnxMiniLMEmbedder()
    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        vector = embedder.embed_query("rebuild me")
    assert embedder.model_path == corrupt
    assert _events(caplog, "embedder.cache_corrupt")
    assert _events(caplog, "embedder.building_graph")
    assert corrupt.stat().st_size > len(data) // 3
    np.testing.assert_allclose(vector, onnx_int8.embed_query("rebuild me"), atol=1e-5)
    assert sorted(p.name for p in cache.iterdir()) == [corrupt.name]


def test_unwritable_cache_dir_falls_back_to_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    fallback_root = tmp_path / "tmp"
    fallback_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(fallback_root))
    # float32 builds faster; the fallback logic does not depend on quantisation.
    embedder = OnnxMiniLMEmbedder(quantize=False, cache_dir=blocker / "models")
    with caplog.at_level(logging.WARNING, logger="memvault.embeddings"):
        vector = embedder.embed_query("fallback")
    assert vector.shape == (384,)
    assert embedder.model_path is not None
    assert embedder.model_path.parent.parent == fallback_root
    assert embedder.model_path.is_file()
    warnings = _events(caplog, "embedder.cache_unwritable")
    assert warnings and warnings[0].levelno == logging.WARNING
    # The next process finds the graph in the fallback directory instead of rebuilding it.
    caplog.clear()
    again = OnnxMiniLMEmbedder(quantize=False, cache_dir=blocker / "models")
    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        again.load()
    assert again.model_path == embedder.model_path
    assert not _events(caplog, "embedder.building_graph")


def test_atomic_write_leaves_no_partial_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.embeddings import minilm_onnx

    # os.replace is patched globally for the duration of this test only.
    def failing_replace(src: str, dst: os.PathLike[str]) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="simulated"):
        minilm_onnx._write_atomically(tmp_path, "model.onnx", b"x" * 1000)
    assert list(tmp_path.iterdir()) == []


def test_prepopulated_cache_file_is_used_without_building(
    onnx_fp32: OnnxMiniLMEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert onnx_fp32.model_path is not None
    cache = tmp_path / "prepopulated"
    cache.mkdir()
    shutil.copy(onnx_fp32.model_path, cache / onnx_fp32.model_path.name)
    embedder = OnnxMiniLMEmbedder(quantize=False, cache_dir=cache)
    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        embedder.load()
    assert embedder.model_path == cache / onnx_fp32.model_path.name
    assert not _events(caplog, "embedder.building_graph")


def test_cached_graph_of_another_kind_is_not_trusted(
    onnx_fp32: OnnxMiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    assert onnx_fp32.model_path is not None
    with caplog.at_level(logging.WARNING, logger="memvault.embeddings"):
        session = onnx_fp32._try_session(onnx_fp32.model_path, {"memvault.kind": "int8"})
    assert session is None
    assert _events(caplog, "embedder.cache_mismatch")


def test_no_writable_directory_at_all_still_works_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))  # the fallback is blocked too
    embedder = OnnxMiniLMEmbedder(quantize=False, cache_dir=blocker / "models")
    with caplog.at_level(logging.WARNING, logger="memvault.embeddings"):
        assert embedder.embed_query("no cache anywhere").shape == (384,)
    assert embedder.model_path is None
    assert _events(caplog, "embedder.cache_disabled")


def test_quantiser_logging_does_not_configure_the_root_logger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memvault.embeddings.minilm_onnx import _quiet_root_logging

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # an application that configured nothing
    with _quiet_root_logging():
        logging.info("what onnxruntime's quantiser does")  # would call basicConfig()
        assert [type(h) for h in root.handlers] == [logging.NullHandler]
    assert root.handlers == []
