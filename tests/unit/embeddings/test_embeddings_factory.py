"""create_embedder specs and the process-wide default embedder."""

from __future__ import annotations

import threading

import pytest

from memvault.embeddings import (
    MINILM_L3_MODEL_ID,
    MINILM_MODEL_ID,
    HashingEmbedder,
    NumpyMiniLMEmbedder,
    OnnxMiniLMEmbedder,
    OnnxMiniLML3Embedder,
    OpenAICompatibleEmbedder,
    create_embedder,
    default_embedder,
    shared_minilm_embedder,
)
from memvault.errors import MemoryConfigError


def test_default_embedder_is_a_shared_lazy_onnx_l6_instance() -> None:
    first = default_embedder()
    assert isinstance(first, OnnxMiniLMEmbedder)
    assert first.model_id == MINILM_MODEL_ID
    assert first.quantized
    assert default_embedder() is first
    assert shared_minilm_embedder() is first


def test_minilm_l3_is_its_own_shared_instance() -> None:
    l3 = create_embedder("minilm-l3")
    assert isinstance(l3, OnnxMiniLML3Embedder)
    assert l3.model_id == MINILM_L3_MODEL_ID
    assert create_embedder("paraphrase-minilm-l3") is l3
    assert l3 is not default_embedder()


def test_default_embedder_singleton_under_concurrency() -> None:
    seen: list[object] = []
    barrier = threading.Barrier(8)

    def grab() -> None:
        barrier.wait()
        seen.append(default_embedder())

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(e) for e in seen}) == 1


@pytest.mark.parametrize("spec", [None, "", "default", " Default ", "minilm", " MiniLM "])
def test_default_specs(spec: str | None) -> None:
    assert create_embedder(spec) is default_embedder()


def test_numpy_and_hashing_specs() -> None:
    assert isinstance(create_embedder("minilm-numpy"), NumpyMiniLMEmbedder)
    hashing = create_embedder("hashing")
    assert isinstance(hashing, HashingEmbedder)
    assert hashing.dimension == 256
    assert create_embedder("hashing:64").dimension == 64


def test_openai_spec_uses_environment_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_EMBEDDINGS_BASE_URL", raising=False)
    embedder = create_embedder("openai:text-embedding-3-small")
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.model_id == "openai-compat:text-embedding-3-small"
    assert embedder.url == "https://api.openai.com/v1/embeddings"
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS_BASE_URL", "http://127.0.0.1:9/v1/")
    local = create_embedder("openai:nomic-embed-text")
    assert isinstance(local, OpenAICompatibleEmbedder)
    assert local.url == "http://127.0.0.1:9/v1/embeddings"


@pytest.mark.parametrize(
    "spec", ["bert", "openai", "openai:", "hashing:abc", "hashing:1", "minilm:x", "numpy"]
)
def test_unknown_or_invalid_specs(spec: str) -> None:
    with pytest.raises(MemoryConfigError):
        create_embedder(spec)
