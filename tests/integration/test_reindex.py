"""``memvault.reindex``: a store moves to another embedding model, resumably, in one swap.

Real stores (SQLite files, PostgreSQL in a throwaway schema, in memory) and the real bundled
model: the stores are built with the hashing embedder (256 dimensions) and reindexed to MiniLM
(384), so a wrong dimension or a vector left over from the old model shows at once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memvault import AsyncMemory, Memory
from memvault.backends._base import BaseBackend
from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryValidationError,
)
from memvault.models import MemoryCategory, MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder, ReindexableStore
from memvault.reindex import ReindexReport, reindex, reindex_sync
from postgres_server import SchemaFactory

OLD = HashingEmbedder(256)

FACTS = {
    "alice": [
        "Alice drinks a double espresso every morning before standup.",
        "The staging database runs PostgreSQL 16 with pgvector.",
        "Alice's cat is called Miso and sleeps on the keyboard.",
        "The quarterly planning meeting moved to Thursday afternoon.",
    ],
    "bob": [
        "Bob is allergic to peanuts; order lunch accordingly.",
        "Bob maintains the nightly backup cron job on the build server.",
        "The release train leaves every second Tuesday.",
    ],
}
SHARED = "The office wifi password rotates on the first of every month."


def _requests(agent: str, n: int) -> list[MemoryStoreRequest]:
    base = FACTS[agent]
    return [
        MemoryStoreRequest(content=f"{base[i % len(base)]} (note {i})")
        if i >= len(base)
        else MemoryStoreRequest(content=base[i])
        for i in range(n)
    ]


async def _fill(store: BaseBackend, per_agent: int = 20) -> int:
    await store.connect()
    for agent in FACTS:
        await store.store_many(agent, _requests(agent, per_agent))
    await store.publish("alice", MemoryStoreRequest(content=SHARED))
    return per_agent * len(FACTS) + 1


async def _all_vectors(store: BaseBackend) -> dict[str, np.ndarray[Any, Any]]:
    ids = [e.id async for e in store.export_entries()]
    return await store.export_vectors(ids)


async def _check_new_model(store: BaseBackend, minilm: Embedder, total: int) -> None:
    """Every memory has MiniLM's vector of its content, and search finds by meaning."""
    entries = [e async for e in store.export_entries()]
    assert len(entries) == total
    vectors = await store.export_vectors([e.id for e in entries])
    expected = minilm.embed_documents([e.content for e in entries])
    for e, want in zip(entries, expected, strict=True):
        got = vectors[e.id]
        assert got.shape == (384,)
        # Batch composition nudges int8-quantised vectors a little; another model would not.
        assert float(np.dot(got, want)) > 0.97, e.content
    # "coffee" shares no word with "espresso": only the new model's vectors find it.
    hits = await store.retrieve("alice", MemoryQuery(text="what coffee does she like", limit=3))
    assert hits and "espresso" in hits[0].content
    shared = await store.retrieve(
        "bob", MemoryQuery(text="network credentials change", include_shared=True, limit=3)
    )
    assert any(h.content == SHARED for h in shared)


@pytest.fixture(params=["sqlite", "postgres", "inmemory"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory of (unconnected) stores of one kind on one location, with a given embedder."""
    made: list[BaseBackend] = []
    shared_inmemory: list[InMemoryBackend] = []
    url = schema = None
    if kind == "postgres":
        url = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("pg_schemas")()

    def make(embedder: Embedder) -> BaseBackend:
        store: BaseBackend
        if kind == "sqlite":
            store = SQLiteBackend(tmp_path / "store.db", embedder)
        elif kind == "postgres":
            assert url is not None and schema is not None
            store = PostgresBackend(url, embedder, schema=schema, pool_max=4)
        else:
            # One in-process store stands for "the same location" opened again.
            if not shared_inmemory:
                shared_inmemory.append(InMemoryBackend(embedder))
            store = shared_inmemory[0]
        made.append(store)
        return store

    yield make
    for store in made:
        await store.disconnect()


# -- the whole run --------------------------------------------------------------------------------


async def test_every_memory_gets_the_new_models_vector_and_search_uses_it(
    make_store: Any, kind: str, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    total = (await store.stats()).total
    seen: list[tuple[int, int]] = []
    report = await reindex(store, minilm, batch_size=7, progress=lambda d, t: seen.append((d, t)))

    assert isinstance(report, ReindexReport)
    assert report.swapped and not report.dry_run
    assert (report.total, report.embedded, report.resumed) == (total, total, 0)
    assert (report.source_model, report.source_dimension) == (OLD.model_id, 256)
    assert (report.target_model, report.target_dimension) == (minilm.model_id, 384)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(seen) >= total // 7
    assert store.embedder is minilm
    await _check_new_model(store, minilm, total)
    assert "reindexed" in report.summary() and str(total) in report.summary()

    # Reopened, the store records the new model: MiniLM opens it, the old model is refused.
    await store.disconnect()
    if kind != "inmemory":
        with pytest.raises(DimensionMismatchError):
            await make_store(OLD).connect()
    again = make_store(minilm)
    await again.connect()
    await _check_new_model(again, minilm, total)
    # Nothing left to do (and nothing staged is left behind).
    noop = await reindex(again, minilm)
    assert noop.up_to_date and not noop.swapped
    assert "nothing to reindex" in noop.summary()


async def _store_with_data(make_store: Any) -> BaseBackend:
    store: BaseBackend = make_store(OLD)
    await _fill(store)
    return store


async def test_a_store_built_with_another_model_opens_for_reindexing(
    make_store: Any, kind: str, minilm: Embedder
) -> None:
    """An unconnected store configured with the new model (what the CLI has) is reindexed."""
    old = await _store_with_data(make_store)
    total = (await old.stats()).total
    await old.disconnect()
    store = make_store(minilm)
    if kind != "inmemory":
        with pytest.raises(EmbeddingModelChangedError):
            await store.connect()
    report = await reindex(store, minilm)
    assert report.swapped and report.total == total
    assert report.source_model == OLD.model_id
    await _check_new_model(store, minilm, total)


async def test_an_interrupted_run_resumes_without_redoing_finished_batches(
    make_store: Any, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    total = (await store.stats()).total
    old_vectors = await _all_vectors(store)

    class Stop(Exception):
        pass

    def stop_after_two(done: int, _total: int) -> None:
        if done >= 10:
            raise Stop

    with pytest.raises(Stop):
        await reindex(store, minilm, batch_size=5, progress=stop_after_two)

    # Nothing swapped: the old vectors and model are in place and search works with them.
    assert store.embedder.model_id == OLD.model_id
    now = await _all_vectors(store)
    assert all(np.array_equal(now[i], v) for i, v in old_vectors.items())
    assert await store.retrieve("bob", MemoryQuery(text="peanuts allergy lunch", limit=1))
    assert isinstance(store, ReindexableStore)
    assert await store.reindex_status(minilm.model_id) == (total, 10)

    dry = await reindex(store, minilm, dry_run=True)
    assert (dry.pending, dry.resumed, dry.total) == (total - 10, 10, total)

    report = await reindex(store, minilm, batch_size=5)
    assert (report.resumed, report.embedded) == (10, total - 10)
    assert "resumed" in report.summary()
    await _check_new_model(store, minilm, total)


async def test_memories_written_during_the_run_get_new_vectors(
    make_store: Any, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    started = asyncio.Event()
    written: list[str] = []

    async def writer() -> None:
        # Another writer of the store, between two batches of the run.
        await started.wait()
        for i in range(2):
            content = f"Carol joined the team as release manager ({i})."
            written.append(await store.store("carol", MemoryStoreRequest(content=content)))

    def progress(done: int, total: int) -> None:
        if done:
            started.set()

    task = asyncio.create_task(writer())
    report = await reindex(store, minilm, batch_size=4, progress=progress)
    await task
    total = (await store.stats()).total
    assert len(written) == 2
    assert report.total == total
    assert report.embedded + report.filled_at_swap == total
    await _check_new_model(store, minilm, total)
    hits = await store.retrieve("carol", MemoryQuery(text="who manages releases", limit=2))
    assert hits and "Carol" in hits[0].content


async def test_the_swap_embeds_what_was_written_after_the_last_batch(
    make_store: Any, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    assert isinstance(store, ReindexableStore)
    await store.reindex_begin(minilm.model_id)
    batch = await store.reindex_pending(minilm.model_id, 1000)
    vectors = minilm.embed_documents([t for _, t in batch])
    staged = await store.reindex_stage(
        minilm.model_id, {mid: vectors[i] for i, (mid, _) in enumerate(batch)}
    )
    assert staged == len(batch)
    late = await store.store("bob", MemoryStoreRequest(content="Bob adopted a greyhound."))
    gone = batch[0][0]
    assert await store.delete("alice", gone) or await store.delete("bob", gone)

    filled = await store.reindex_swap(minilm, minilm.embed_documents)
    assert filled == 1
    got = await store.export_vectors([late])
    want = minilm.embed_documents(["Bob adopted a greyhound."])[0]
    assert float(np.dot(got[late], want)) > 0.97
    await _check_new_model(store, minilm, (await store.stats()).total)


async def test_pending_pages_walk_on_from_the_last_id(make_store: Any, minilm: Embedder) -> None:
    store = await _store_with_data(make_store)
    assert isinstance(store, ReindexableStore)
    order = [e.id async for e in store.export_in_storage_order()]
    for begun in (False, True):  # before and after the staging area exists
        if begun:
            await store.reindex_begin(minilm.model_id)
        first = await store.reindex_pending(minilm.model_id, 5)
        assert [i for i, _ in first] == order[:5]
        second = await store.reindex_pending(minilm.model_id, 5, after=first[-1][0])
        assert [i for i, _ in second] == order[5:10]
    # A cursor that is gone ends the pages (the engine then starts over from the beginning).
    await store.delete("alice", order[4])
    assert await store.reindex_pending(minilm.model_id, 5, after=order[4]) == []
    report = await reindex(store, minilm, batch_size=5)
    assert report.total == len(order) - 1


async def test_a_dry_run_writes_nothing_and_estimates_the_time(
    make_store: Any, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    total = (await store.stats()).total
    before = await _all_vectors(store)
    report = await reindex(store, minilm, dry_run=True)
    assert report.dry_run and not report.swapped
    assert (report.pending, report.total, report.resumed) == (total, total, 0)
    assert report.rate is not None and report.rate > 0
    assert report.estimated_seconds is not None
    assert report.estimated_seconds == pytest.approx(total / report.rate)
    assert f"{total} of {total} memories" in report.summary()
    assert store.embedder is OLD
    after = await _all_vectors(store)
    assert all(np.array_equal(after[i], v) for i, v in before.items())
    assert isinstance(store, ReindexableStore)
    assert await store.reindex_status(minilm.model_id) == (total, 0)


async def test_force_re_embeds_a_store_already_on_the_model(
    make_store: Any, minilm: Embedder
) -> None:
    store = await _store_with_data(make_store)
    await reindex(store, minilm)
    again = await reindex(store, minilm, force=True, batch_size=50)
    assert again.swapped and again.embedded == again.total
    assert again.source_model == again.target_model == minilm.model_id
    await _check_new_model(store, minilm, again.total)


# -- SQLite: derived indexes and other processes --------------------------------------------------


async def test_sqlite_derived_indexes_are_rebuilt_after_the_swap(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "store.db"
    store = SQLiteBackend(path, OLD)
    total = await _fill(store)
    # Load the in-process matrices (and postings) of the old vectors, and leave a stale graph
    # file where the HNSW graphs live.
    assert await store.retrieve("alice", MemoryQuery(text="espresso", limit=1))
    ann = path.with_name(path.name + ".ann")
    ann.mkdir()
    (ann / "stale.usearch").write_bytes(b"old graph")

    await reindex(store, minilm)
    assert not ann.exists()
    await _check_new_model(store, minilm, total)
    # Lexical search still works from the rebuilt postings.
    hits = await store.retrieve("bob", MemoryQuery(text="peanuts", limit=1))
    assert hits and "peanuts" in hits[0].content
    with sqlite3.connect(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert (meta["embedding_model"], meta["dimension"]) == (minilm.model_id, "384")
    assert "reindex_vectors" not in tables
    await store.disconnect()


async def test_sqlite_another_process_on_the_old_model_is_stopped_by_the_swap(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "store.db"
    store = SQLiteBackend(path, OLD)
    await _fill(store)
    other = SQLiteBackend(path, OLD)  # stands for a server still running with the old model
    await other.connect()
    assert await other.retrieve("alice", MemoryQuery(text="espresso", limit=1))
    # Its writes during the staging are picked up by the run.
    await other.store("bob", MemoryStoreRequest(content="Bob moved to the Lisbon office."))

    report = await reindex(store, minilm)
    assert report.total == (await store.stats()).total

    with pytest.raises(EmbeddingModelChangedError, match="reindexed"):
        await other.retrieve("alice", MemoryQuery(text="espresso", limit=1))
    with pytest.raises(EmbeddingModelChangedError):
        await other.store("bob", MemoryStoreRequest(content="written with the old model"))
    await other.disconnect()
    await _check_new_model(store, minilm, report.total)
    await store.disconnect()


# -- PostgreSQL: the column is retyped and the HNSW index rebuilt -------------------------------


async def test_postgres_column_dimension_and_hnsw_index_follow_the_new_model(
    postgres_url: str, pg_schemas: SchemaFactory, minilm: Embedder
) -> None:
    import psycopg

    schema = pg_schemas()
    store = PostgresBackend(postgres_url, OLD, schema=schema)
    total = await _fill(store)
    await reindex(store, minilm, batch_size=16)
    await _check_new_model(store, minilm, total)
    await store.disconnect()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        typmod = conn.execute(
            "SELECT atttypmod FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        ).fetchone()
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s"
            " AND indexname = 'memories_embedding_hnsw'",
            [schema],
        ).fetchone()
        staging = conn.execute("SELECT to_regclass('reindex_vectors')").fetchone()
        nulls = conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL").fetchone()
    assert typmod == (384,)
    assert index is not None and "hnsw" in index[0]
    assert staging == (None,)
    assert nulls == (0,)


# -- composite, facades, errors -------------------------------------------------------------------


async def test_a_composite_store_is_reindexed_child_by_child(
    tmp_path: Path, minilm: Embedder
) -> None:
    working = InMemoryBackend(OLD)
    durable = SQLiteBackend(tmp_path / "store.db", OLD)
    store = CompositeBackend({MemoryCategory.WORKING: working}, durable)
    await store.connect()
    await store.store_many("alice", _requests("alice", 6))
    await store.store(
        "alice",
        MemoryStoreRequest(content="Scratch: compare espresso grinders", category="working"),
    )
    report = await reindex(store, minilm)
    assert report.swapped and report.total == 7
    assert set(report.stores) == {working.location, durable.location}
    assert working.embedder is minilm and durable.embedder is minilm
    assert store.embedder is minilm
    hits = await store.retrieve("alice", MemoryQuery(text="coffee machines", limit=5))
    assert any("grinders" in h.content for h in hits)
    await store.disconnect()


async def test_a_composite_opened_with_the_new_model_reindexes_its_old_child(
    tmp_path: Path, minilm: Embedder
) -> None:
    """What a Memory configured with the new model holds: an in-process child already on it,
    and a durable child built with the old model."""
    path = tmp_path / "store.db"
    old = SQLiteBackend(path, OLD)
    await _fill(old, per_agent=3)
    await old.disconnect()
    durable = SQLiteBackend(path, minilm)
    store = CompositeBackend({MemoryCategory.WORKING: InMemoryBackend(minilm)}, durable)
    report = await reindex(store, minilm)
    assert (report.source_model, report.target_model) == (OLD.model_id, minilm.model_id)
    assert report.stores == (durable.location,)
    assert report.total == 7
    await _check_new_model(durable, minilm, 7)
    await store.disconnect()


def test_a_sync_memory_is_reindexed_and_keeps_working(tmp_path: Path, minilm: Embedder) -> None:
    mem = Memory(str(tmp_path / "m.db"), embedder=OLD)
    try:
        for text in FACTS["alice"]:
            mem.add(text, agent_id="alice")
        report = reindex_sync(mem, minilm, batch_size=2)
        assert report.swapped and report.total == len(FACTS["alice"])
        hits = mem.search("what coffee does she like", agent_id="alice", limit=1)
        assert "espresso" in hits[0].content
        mem.add("Alice switched to decaf in the afternoon.", agent_id="alice")
        assert mem.backend.embedder is minilm
    finally:
        mem.close()
    reopened = Memory(str(tmp_path / "m.db"), embedder=minilm)
    try:
        assert len(reopened.list(agent_id="alice")) == len(FACTS["alice"]) + 1
    finally:
        reopened.close()


async def test_the_async_api_takes_a_memory_of_either_kind(
    tmp_path: Path, minilm: Embedder
) -> None:
    amem = AsyncMemory(str(tmp_path / "a.db"), embedder=OLD)
    await amem.add(FACTS["bob"][0], agent_id="bob")
    report = await reindex(amem, minilm)
    assert report.swapped and report.total == 1
    await amem.close()

    mem = Memory(str(tmp_path / "s.db"), embedder=OLD)
    try:
        mem.add(FACTS["bob"][1], agent_id="bob")
        report = await reindex(mem, minilm)
        assert report.swapped and report.total == 1
    finally:
        mem.close()


class _NoReindex:
    """A store that is a MemoryStore but lacks the reindex hook (a third-party backend)."""

    def __init__(self, inner: InMemoryBackend) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("reindex_"):
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_bad_arguments_and_unsupported_stores_are_refused(minilm: Embedder) -> None:
    store = InMemoryBackend(OLD)
    await store.connect()
    with pytest.raises(MemoryValidationError, match="batch_size"):
        await reindex(store, minilm, batch_size=0)
    with pytest.raises(MemoryValidationError, match="Embedder"):
        await reindex(store, "hashing:64")  # type: ignore[arg-type]
    with pytest.raises(MemoryCapabilityError, match="memvault store"):
        await reindex(object(), minilm)
    with pytest.raises(MemoryCapabilityError, match="does not support reindex"):
        await reindex(_NoReindex(store), minilm)


async def test_the_stand_in_for_the_old_model_refuses_to_embed(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "store.db"
    old = SQLiteBackend(path, OLD)
    await _fill(old, per_agent=3)
    await old.disconnect()
    store = SQLiteBackend(path, minilm)

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await reindex(store, minilm, progress=stop)
    # Opened for reindexing off the old model: reads work, embedding with it does not.
    assert store.embedder.model_id == OLD.model_id
    assert await store.list_entries("alice", MemoryQuery(limit=10))
    with pytest.raises(MemoryConfigError, match="reindexing"):
        await store.retrieve("alice", MemoryQuery(text="espresso"))
    await store.disconnect()
