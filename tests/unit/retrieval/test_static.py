"""The static word-embedding view (memvault.retrieval.static) and its ranking feature."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memvault.errors import EmbedderUnavailableError
from memvault.models import CandidateSet, MemoryCategory, MemoryEntry
from memvault.retrieval.evidence import FEATURES, evidence_features, static_vectors
from memvault.retrieval.static import (
    STATIC_DIMENSION,
    StaticWordEmbedder,
    static_embedder,
)

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)
STATIC = FEATURES.index("static")


def entry(i: str, content: str) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.EPISODIC,
        content=content,
        created_at=NOW,
        updated_at=NOW,
    )


def test_vectors_are_unit_length_deterministic_and_zero_for_no_tokens() -> None:
    texts = ["I cooked pasta for my friend on Saturday.", "", "ok"]
    first = static_embedder().embed(texts)
    assert first.shape == (3, STATIC_DIMENSION) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), [1.0, 0.0, 1.0], atol=1e-5)
    np.testing.assert_array_equal(static_embedder().embed(texts), first)
    # A text's vector does not depend on the batch it was computed in.
    np.testing.assert_allclose(static_embedder().embed([texts[0]])[0], first[0], atol=1e-6)


def test_cosines_follow_meaning() -> None:
    q, near, far = static_embedder().embed(
        [
            "What did I cook for my friend?",
            "I made spaghetti carbonara for a friend who came over for dinner.",
            "Our Kubernetes cluster runs version 1.29 in the eu-west region.",
        ]
    )
    assert float(q @ near) > float(q @ far) + 0.1


def test_a_huge_text_costs_a_bounded_number_of_tokens() -> None:
    vec = static_embedder().embed(["lorem ipsum dolor " * 20_000])[0]
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)


def test_missing_table_is_a_typed_error_naming_the_package(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="static word-embedding table"):
        StaticWordEmbedder(tmp_path).embed(["anything"])


def test_the_feature_is_the_cosine_of_the_static_vectors() -> None:
    texts = {
        "a": "I made spaghetti carbonara for a friend who came over for dinner.",
        "b": "Our Kubernetes cluster runs version 1.29 in the eu-west region.",
    }
    cands = CandidateSet(
        dense=[("a", 0.3), ("b", 0.2)],
        entries={i: entry(i, t) for i, t in texts.items()},
        query_vector=np.ones(4, dtype=np.float32) / 2,
    )
    query = "What did I cook for my friend?"
    feats = evidence_features(cands, query_text=query, now=NOW)
    vecs = static_vectors(list(texts.values())).astype(np.float32)
    expected = vecs @ static_vectors([query])[0].astype(np.float32)
    got = [feats.matrix[feats.ids.index(i), STATIC] for i in texts]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got[0] > got[1]
    # An empty query has no static evidence, and a lexical-only ranking (dense off) none either.
    assert not evidence_features(cands, query_text=" ", now=NOW).matrix[:, STATIC].any()
    lexical = evidence_features(cands, query_text=query, now=NOW, use_dense=False)
    assert not lexical.matrix[:, STATIC].any()


def test_a_vector_the_store_kept_is_used_instead_of_computing_one() -> None:
    # A fresh id (not yet described by ranking's memo) with a stored vector that is not the
    # content's: the feature must read the stored one, which proves the store's vectors are used.
    content = "I planted tomatoes and basil in the garden this morning."
    stored = np.zeros(STATIC_DIMENSION, dtype=np.float16)
    stored[0] = 1.0
    query = "What did I plant in the garden?"
    q = static_vectors([query])[0].astype(np.float32)
    cands = CandidateSet(
        dense=[("stored-static-1", 0.4)],
        entries={"stored-static-1": entry("stored-static-1", content)},
        query_vector=np.ones(4, dtype=np.float32) / 2,
        static={"stored-static-1": stored},
    )
    feats = evidence_features(cands, query_text=query, now=NOW)
    assert feats.matrix[0, STATIC] == pytest.approx(float(q[0]), rel=1e-5)
    # Without a stored vector the content's own is computed.
    cands = CandidateSet(
        dense=[("stored-static-2", 0.4)],
        entries={"stored-static-2": entry("stored-static-2", content)},
        query_vector=np.ones(4, dtype=np.float32) / 2,
    )
    own = float(static_vectors([content])[0].astype(np.float32) @ q)
    feats = evidence_features(cands, query_text=query, now=NOW)
    assert feats.matrix[0, STATIC] == pytest.approx(own, rel=1e-5)


def test_a_stored_vector_of_another_size_is_not_read() -> None:
    content = "We repainted the kitchen a pale green over the long weekend."
    query = "What colour is the kitchen?"
    cands = CandidateSet(
        dense=[("stored-static-3", 0.4)],
        entries={"stored-static-3": entry("stored-static-3", content)},
        query_vector=np.ones(4, dtype=np.float32) / 2,
        static={"stored-static-3": np.ones(STATIC_DIMENSION // 2, dtype=np.float16)},
    )
    own = float(
        static_vectors([content])[0].astype(np.float32)
        @ static_vectors([query])[0].astype(np.float32)
    )
    feats = evidence_features(cands, query_text=query, now=NOW)
    assert feats.matrix[0, STATIC] == pytest.approx(own, rel=1e-5)


def test_a_computed_vector_is_remembered_beside_what_a_temporal_query_derived() -> None:
    from memvault.retrieval import evidence

    cands = CandidateSet(
        dense=[("memo-static-1", 0.4)],
        entries={"memo-static-1": entry("memo-static-1", "I ran my first marathon yesterday.")},
        query_vector=np.ones(4, dtype=np.float32) / 2,
    )
    evidence_features(cands, query_text="When did I run a marathon?", now=NOW)
    kept = evidence._profiles["memo-static-1"]
    # Both the temporal cue (filled during the same ranking) and the static vector are kept.
    assert kept.when is True and kept.static is not None
    assert np.frombuffer(kept.static, dtype="<f2").shape == (STATIC_DIMENSION,)
