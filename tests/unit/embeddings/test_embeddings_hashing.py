"""The dependency-free hashing embedder."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConfigError
from memvault.protocols import Embedder


def test_protocol_and_identity() -> None:
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 256
    assert embedder.model_id == "hashing-v1-256"
    assert HashingEmbedder(64).model_id == "hashing-v1-64"


def test_deterministic_within_and_across_processes() -> None:
    text = "The user prefers dark mode and vim keybindings."
    vector = HashingEmbedder(32).embed_query(text)
    np.testing.assert_array_equal(vector, HashingEmbedder(32).embed_query(text))
    # The built-in hash() is salted per process; blake2b must not be.
    code = (
        "from memvault.embeddings import HashingEmbedder;"
        "import json;"
        f"print(json.dumps(HashingEmbedder(32).embed_query({text!r}).tolist()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    ).stdout
    np.testing.assert_array_equal(np.array(json.loads(out), dtype=np.float32), vector)


def test_shapes_norms_and_empty_input() -> None:
    embedder = HashingEmbedder(128)
    vectors = embedder.embed_documents(["one two three", "", "!!!", "Ünïcödé wörds"])
    assert vectors.shape == (4, 128)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert embedder.embed_documents([]).shape == (0, 128)
    assert embedder.embed_query("x").shape == (128,)


def test_lexical_overlap_ranks_first() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("postgres connection refused")
    docs = embedder.embed_documents(
        [
            "the cat sat on the mat",
            "Error: Postgres connection refused on port 5432",
            "quarterly revenue grew",
        ]
    )
    assert int(np.argmax(docs @ query)) == 1


def test_case_insensitive_and_order_sensitive_through_bigrams() -> None:
    embedder = HashingEmbedder()
    a, b, c = embedder.embed_documents(["Dog bites man", "dog BITES man", "man bites dog"])
    np.testing.assert_array_equal(a, b)
    assert float(a @ c) < 0.999  # same words, different bigrams


@pytest.mark.parametrize("dimension", [0, 1, -5, True])
def test_invalid_dimension(dimension: int) -> None:
    with pytest.raises(MemoryConfigError):
        HashingEmbedder(dimension)
