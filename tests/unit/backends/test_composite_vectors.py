"""A composite store keeps the vectors its caller computed: a batch is embedded once, whether it
goes to one child or is split between several (WORKING in process, the rest in SQLite).

Real stores (a SQLite file, the in-process store), the real embedding model behind a wrapper
that counts what it embeds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from counting_embedder import CountingEmbedder
from memvault import AsyncMemory
from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.errors import MemoryValidationError
from memvault.models import MemoryCategory, MemoryStoreRequest
from memvault.protocols import Embedder

AGENT = "dev-1"


@pytest.fixture
def counting(minilm: Embedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)


@pytest.fixture
async def composite(tmp_path: Path, counting: CountingEmbedder) -> AsyncIterator[CompositeBackend]:
    embedder: Any = counting
    store = CompositeBackend(
        {MemoryCategory.WORKING: InMemoryBackend(embedder)},
        SQLiteBackend(tmp_path / "durable.db", embedder),
    )
    await store.connect()
    yield store
    await store.disconnect()


def _requests(*categories: MemoryCategory) -> list[MemoryStoreRequest]:
    return [
        MemoryStoreRequest(content=f"Note {i}: the {c.value} detail number {i}.", category=c)
        for i, c in enumerate(categories)
    ]


@pytest.mark.parametrize(
    "categories",
    [
        (MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC),  # one child
        (MemoryCategory.WORKING, MemoryCategory.SEMANTIC, MemoryCategory.WORKING),  # both
    ],
    ids=["one-child", "split"],
)
async def test_given_vectors_are_stored_as_is_without_embedding_again(
    composite: CompositeBackend,
    counting: CountingEmbedder,
    minilm: Embedder,
    categories: tuple[MemoryCategory, ...],
) -> None:
    requests = _requests(*categories)
    # Vectors unlike the texts' own embeddings: only kept vectors can come back bit-exact.
    rng = np.random.default_rng(7)
    raw = rng.normal(size=(len(requests), minilm.dimension)).astype(np.float32)
    vectors = list(raw / np.linalg.norm(raw, axis=1, keepdims=True))
    ids = await composite.store_many(AGENT, requests, vectors=vectors)
    assert counting.calls["texts"] == 0
    stored = await composite.export_vectors(ids)
    for mid, vec in zip(ids, vectors, strict=True):
        assert np.asarray(stored[mid]).tobytes() == np.asarray(vec, dtype=np.float32).tobytes()
    working = {mid for mid, c in zip(ids, categories, strict=True) if c is MemoryCategory.WORKING}
    for mid in ids:
        entry = await composite.get(AGENT, mid)
        assert entry is not None
        in_scratch = await composite.route(MemoryCategory.WORKING).get(AGENT, mid) is not None
        assert in_scratch == (mid in working)


async def test_without_vectors_each_text_is_embedded_once(
    composite: CompositeBackend, counting: CountingEmbedder
) -> None:
    requests = _requests(MemoryCategory.WORKING, MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC)
    ids = await composite.store_many(AGENT, requests)
    assert len(ids) == 3 and counting.calls["texts"] == 3


async def test_a_wrong_number_of_vectors_is_refused_before_anything_is_stored(
    composite: CompositeBackend, minilm: Embedder
) -> None:
    requests = _requests(MemoryCategory.WORKING, MemoryCategory.SEMANTIC)
    one = np.asarray(minilm.embed_documents(["only one"]))[0]
    with pytest.raises(MemoryValidationError, match="1 vectors for 2 requests"):
        await composite.store_many(AGENT, requests, vectors=[one])
    assert await composite.count(AGENT) == 0


async def test_a_bad_vector_in_a_later_child_undoes_the_earlier_ones(
    composite: CompositeBackend, minilm: Embedder
) -> None:
    requests = _requests(MemoryCategory.WORKING, MemoryCategory.SEMANTIC)
    good = np.asarray(minilm.embed_documents(["fine"]))[0]
    with pytest.raises(MemoryValidationError):
        await composite.store_many(AGENT, requests, vectors=[good, good[:10]])
    assert await composite.count(AGENT) == 0


async def test_memory_add_many_over_a_composite_embeds_every_text_once(
    tmp_path: Path, counting: CountingEmbedder
) -> None:
    embedder: Any = counting
    store = CompositeBackend(
        {MemoryCategory.WORKING: InMemoryBackend(embedder)},
        SQLiteBackend(tmp_path / "mem.db", embedder),
    )
    async with AsyncMemory(backend=store, embedder=embedder) as mem:
        items = [
            {"content": f"Deploy fact {i} for the release train.", "category": category}
            for i, category in enumerate(["working", "semantic", "episodic", "working"])
        ]
        # The write planner embeds the batch for its duplicate check and hands the vectors on.
        ids = await mem.add_many(items, agent_id=AGENT, dedup=True)
        assert len(set(ids)) == 4
        assert counting.calls["texts"] == 4
        hits = await mem.search("Deploy fact 1 for the release train.", agent_id=AGENT)
        assert ids[1] in [h.id for h in hits]
