"""The MiniLM embedders on the real model: agreement, semantics, shapes, caching, laziness."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memvault.embeddings import (
    MINILM_DIMENSION,
    MINILM_MODEL_ID,
    NumpyMiniLMEmbedder,
    OnnxMiniLMEmbedder,
)
from memvault.embeddings._base import MiniLMEmbedderBase
from memvault.protocols import Embedder


def _rowwise_cosine(a: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float64]:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1)
    cos: NDArray[np.float64] = np.sum(a64 * b64, axis=1) / norms
    return cos


@pytest.fixture(params=["numpy", "onnx-int8", "onnx-float32"])
def any_minilm(
    request: pytest.FixtureRequest,
    numpy_embedder: NumpyMiniLMEmbedder,
    onnx_int8: OnnxMiniLMEmbedder,
    onnx_fp32: OnnxMiniLMEmbedder,
) -> MiniLMEmbedderBase:
    return {"numpy": numpy_embedder, "onnx-int8": onnx_int8, "onnx-float32": onnx_fp32}[
        request.param
    ]


def test_int8_onnx_agrees_with_numpy_reference(
    onnx_int8: OnnxMiniLMEmbedder, numpy_embedder: NumpyMiniLMEmbedder, sentences: list[str]
) -> None:
    cos = _rowwise_cosine(
        onnx_int8.embed_documents(sentences), numpy_embedder.embed_documents(sentences)
    )
    assert cos.min() >= 0.98, list(zip(sentences, cos.round(4), strict=True))


def test_float32_onnx_matches_numpy_reference(
    onnx_fp32: OnnxMiniLMEmbedder, numpy_embedder: NumpyMiniLMEmbedder, sentences: list[str]
) -> None:
    cos = _rowwise_cosine(
        onnx_fp32.embed_documents(sentences), numpy_embedder.embed_documents(sentences)
    )
    assert cos.min() >= 0.9999, list(zip(sentences, cos.round(6), strict=True))


def test_int8_short_inputs_stay_close_and_rank_like_the_reference(
    onnx_int8: OnnxMiniLMEmbedder, numpy_embedder: NumpyMiniLMEmbedder, sentences: list[str]
) -> None:
    # With one or two real tokens the pooled vector is dominated by [CLS]/[SEP], and dynamic
    # per-tensor activation quantisation costs a little more: ~0.965-0.99 instead of >= 0.99.
    short = ["ok", "", "pizza", "Berlin", "dentist", "postgres error", "marathon time", "flour"]
    cos = _rowwise_cosine(onnx_int8.embed_documents(short), numpy_embedder.embed_documents(short))
    assert cos.min() >= 0.95, list(zip(short, cos.round(4), strict=True))
    # What matters for retrieval: the same best document for each short query.
    docs_q, docs_r = onnx_int8.embed_documents(sentences), numpy_embedder.embed_documents(sentences)
    for query in short[2:]:
        best_q = int(np.argmax(docs_q @ onnx_int8.embed_query(query)))
        best_r = int(np.argmax(docs_r @ numpy_embedder.embed_query(query)))
        assert best_q == best_r, (query, sentences[best_q], sentences[best_r])


def test_numpy_reference_reproduces_sentence_transformers(
    numpy_embedder: NumpyMiniLMEmbedder,
) -> None:
    # The similarity sentence-transformers documents for this pair with all-MiniLM-L6-v2.
    a, b = numpy_embedder.embed_documents(
        ["A man is eating food.", "A man is eating a piece of bread."]
    )
    assert float(a @ b) == pytest.approx(0.7553, abs=2e-3)


def test_paraphrase_ranks_above_unrelated_sentences(any_minilm: MiniLMEmbedderBase) -> None:
    query = any_minilm.embed_query("Which programming editor settings does the user like?")
    docs = any_minilm.embed_documents(
        [
            "The weather in Lisbon was sunny all week.",
            "The user prefers dark mode and vim keybindings in their editor.",
            "Quarterly revenue grew thanks to cloud subscriptions.",
            "He is allergic to peanuts and shellfish.",
            "The cat slept on the warm windowsill.",
        ]
    )
    scores = docs @ query
    assert int(np.argmax(scores)) == 1
    assert scores[1] - np.sort(scores)[-2] > 0.1


def test_shapes_dtype_and_unit_norm(any_minilm: MiniLMEmbedderBase, sentences: list[str]) -> None:
    vectors = any_minilm.embed_documents(sentences)
    assert vectors.shape == (len(sentences), MINILM_DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = any_minilm.embed_query(sentences[0])
    assert query.shape == (MINILM_DIMENSION,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_query_and_document_vectors_agree(any_minilm: MiniLMEmbedderBase) -> None:
    text = "the same text embedded two ways"
    np.testing.assert_allclose(
        any_minilm.embed_query(text), any_minilm.embed_documents([text])[0], atol=1e-5
    )


@pytest.mark.parametrize("empty", [[], ()])
def test_empty_input_gives_empty_matrix(any_minilm: MiniLMEmbedderBase, empty: list[str]) -> None:
    out = any_minilm.embed_documents(empty)
    assert out.shape == (0, MINILM_DIMENSION)
    assert out.dtype == np.float32


def test_empty_input_does_not_load_the_model() -> None:
    embedder = OnnxMiniLMEmbedder()
    assert embedder.embed_documents([]).shape == (0, MINILM_DIMENSION)
    assert not embedder.is_loaded


@pytest.mark.parametrize(
    ("quantize", "batch_size", "max_batch_tokens"),
    [(False, 3, 8192), (True, 3, 8192), (False, 64, 60)],
    ids=["float32", "int8", "token-budget"],
)
def test_order_preserved_with_mixed_lengths_and_batches(
    quantize: bool,
    batch_size: int,
    max_batch_tokens: int,
    model_cache_dir: Path,
    sentences: list[str],
) -> None:
    # Lengths are interleaved so that sorting by length really permutes the input; the small
    # batch size or token budget forces several batches of different widths and row counts.
    texts = [s * (1 + i % 3) for i, s in enumerate(sentences)]
    embedder = OnnxMiniLMEmbedder(
        quantize=quantize,
        cache_dir=model_cache_dir,
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
    )
    together = embedder.embed_documents(texts)
    one_by_one = np.stack([embedder.embed_documents([t])[0] for t in texts])
    if quantize:
        # Dynamic quantisation picks activation scales per batch, so a text's vector moves a
        # little with its batch mates; a permutation bug would move it far more.
        assert _rowwise_cosine(together, one_by_one).min() > 0.98
    else:
        np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    # Each row must be closest to its own text.
    assert np.array_equal(np.argmax(together @ one_by_one.T, axis=1), np.arange(len(texts)))


def test_padding_does_not_change_numpy_vectors(numpy_embedder: NumpyMiniLMEmbedder) -> None:
    short, long = "short text", "a considerably longer text " * 10
    batched = numpy_embedder.embed_documents([short, long])
    np.testing.assert_allclose(batched[0], numpy_embedder.embed_documents([short])[0], atol=1e-5)


def test_long_text_is_truncated_without_error(any_minilm: MiniLMEmbedderBase) -> None:
    long_text = "memvault stores memories for agents. " * 2000  # ~12k tokens
    longer = long_text + "this tail is far beyond the 256-token window. " * 50
    vectors = any_minilm.embed_documents([long_text, longer, "short"])
    assert vectors.shape == (3, MINILM_DIMENSION)
    assert np.isfinite(vectors).all()
    # Both are cut at the same 256 tokens, so the extra tail cannot change the vector.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)


def test_unusual_inputs(onnx_int8: OnnxMiniLMEmbedder) -> None:
    texts = ["", "   ", "🙂🙂🙂", "\x00\x01 control chars", "日本語のテキスト", "a\nb\tc"]
    vectors = onnx_int8.embed_documents(texts)
    assert vectors.shape == (len(texts), MINILM_DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_query_cache_returns_equal_independent_copies(onnx_int8: OnnxMiniLMEmbedder) -> None:
    first = onnx_int8.embed_query("what does the user like to eat?")
    second = onnx_int8.embed_query("what does the user like to eat?")
    np.testing.assert_array_equal(first, second)
    assert first is not second
    assert not np.shares_memory(first, second)
    first *= 0.0  # a caller mutating its vector must not affect later callers
    third = onnx_int8.embed_query("what does the user like to eat?")
    np.testing.assert_array_equal(third, second)
    assert third.flags.writeable


def test_rejects_a_bare_string(onnx_int8: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(TypeError, match="single string"):
        onnx_int8.embed_documents("not a list")
    with pytest.raises(TypeError):
        onnx_int8.embed_documents(["ok", 3])  # type: ignore[list-item]


def test_both_runtimes_report_the_same_model(
    numpy_embedder: NumpyMiniLMEmbedder,
    onnx_int8: OnnxMiniLMEmbedder,
    onnx_fp32: OnnxMiniLMEmbedder,
) -> None:
    for embedder in (numpy_embedder, onnx_int8, onnx_fp32):
        assert isinstance(embedder, Embedder)
        assert embedder.model_id == MINILM_MODEL_ID == "sentence-transformers/all-MiniLM-L6-v2"
        assert embedder.dimension == 384
    assert {numpy_embedder.runtime, onnx_int8.runtime, onnx_fp32.runtime} == {
        "numpy",
        "onnx-int8",
        "onnx-float32",
    }


def test_construction_is_lazy_and_load_logs(
    model_cache_dir: Path, onnx_int8: OnnxMiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = OnnxMiniLMEmbedder()
    assert not embedder.is_loaded
    assert embedder.model_path is None
    assert "not loaded" in repr(embedder)
    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        embedder.embed_query("hello")
    assert embedder.is_loaded
    loaded = [r for r in caplog.records if r.getMessage().startswith("embedder.loaded")]
    assert len(loaded) == 1
    assert loaded[0].levelno == logging.INFO
    assert "load_seconds=" in loaded[0].getMessage()


def test_concurrent_first_use_loads_once_and_agrees(
    sentences: list[str], caplog: pytest.LogCaptureFixture, onnx_int8: OnnxMiniLMEmbedder
) -> None:
    embedder = OnnxMiniLMEmbedder()  # shares the session's cached graph file
    results: dict[int, NDArray[np.float32]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def work(i: int) -> None:
        try:
            start.wait()
            results[i] = embedder.embed_documents(sentences[i : i + 5])
        except BaseException as exc:  # surfaced below; threads must not die silently
            errors.append(exc)

    with caplog.at_level(logging.INFO, logger="memvault.embeddings"):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert sum(r.getMessage().startswith("embedder.loaded") for r in caplog.records) == 1
    for i, vectors in results.items():
        expected = onnx_int8.embed_documents(sentences[i : i + 5])
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
