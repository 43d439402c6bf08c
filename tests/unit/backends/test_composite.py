"""Routing, aggregation, all-or-nothing batches and configuration of the composite backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memvault import AsyncMemory
from memvault.backends.composite import CompositeBackend
from memvault.backends.factory import create_memory_backend, open_backend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.config import MemvaultConfig, load_config
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import (
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.models import MemoryCategory, MemoryEntry, MemoryQuery, MemoryStoreRequest
from memvault.protocols import MemoryStore

W, E, S = MemoryCategory.WORKING, MemoryCategory.EPISODIC, MemoryCategory.SEMANTIC
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def req(content: str, category: MemoryCategory = S, **kw: Any) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=content, category=category, **kw)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(64)


@pytest.fixture
async def parts(
    tmp_path: Path, embedder: HashingEmbedder
) -> AsyncIterator[tuple[CompositeBackend, InMemoryBackend, SQLiteBackend]]:
    """A connected composite: working memory in process, everything else in SQLite."""
    working = InMemoryBackend(embedder)
    durable = SQLiteBackend(tmp_path / "durable.db", embedder)
    comp = CompositeBackend({W: working}, durable)
    await comp.connect()
    try:
        yield comp, working, durable
    finally:
        await comp.disconnect()


# -- routing ----------------------------------------------------------------------------------


async def test_working_memory_lives_in_process_and_semantic_persists(
    tmp_path: Path, embedder: HashingEmbedder
) -> None:
    path = tmp_path / "durable.db"
    comp = CompositeBackend({W: InMemoryBackend(embedder)}, SQLiteBackend(path, embedder))
    await comp.connect()
    scratch = await comp.store("a", req("editing report.md right now", W))
    fact = await comp.store("a", req("the user prefers dark mode"))
    assert comp.route(W) is comp.routes[W]
    assert await comp.routes[W].get("a", scratch) is not None
    assert await comp.default.get("a", scratch) is None
    assert await comp.default.get("a", fact) is not None
    assert await comp.count("a") == 2
    await comp.disconnect()

    again = CompositeBackend({W: InMemoryBackend(embedder)}, SQLiteBackend(path, embedder))
    await again.connect()
    try:
        assert await again.get("a", scratch) is None
        got = await again.get("a", fact)
        assert got is not None and got.content == "the user prefers dark mode"
        assert await again.count("a") == 1
    finally:
        await again.disconnect()


async def test_store_many_spanning_children_keeps_input_order(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, working, durable = parts
    ids = await comp.store_many(
        "a", [req("fact one"), req("scratch one", W), req("episode one", E), req("scratch two", W)]
    )
    assert len(set(ids)) == 4
    assert await working.count("a") == 2
    assert await durable.count("a") == 2
    for mid, text in zip(
        ids, ["fact one", "scratch one", "episode one", "scratch two"], strict=True
    ):
        got = await comp.get("a", mid)
        assert got is not None and got.content == text


async def test_a_batch_failing_in_a_later_child_leaves_nothing(
    tmp_path: Path, embedder: HashingEmbedder
) -> None:
    working = InMemoryBackend(embedder)
    durable = SQLiteBackend(tmp_path / "d.db", embedder, max_content_chars=40)
    comp = CompositeBackend({W: working}, durable)
    await comp.connect()
    try:
        long = "a semantic fact that is longer than forty characters"
        with pytest.raises(MemoryValidationError, match="maximum"):
            await comp.store_many("a", [req("scratch", W), req(long)])
        assert await working.count("a") == 0
        assert await durable.count("a") == 0
        # The same holds for imports: the in-process child's insert is undone.
        entries = [_entry("0190a000-0000-7000-8000-000000000001", "scratch", W)]
        entries.append(_entry("0190a000-0000-7000-8000-000000000002", long, S))
        with pytest.raises(MemoryValidationError):
            await comp.import_entries(entries)
        assert await comp.count("a") == 0
    finally:
        await comp.disconnect()


async def test_invalid_batches_fail_before_any_child_writes(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, _, _ = parts
    with pytest.raises(MemoryValidationError, match="expires_at"):
        await comp.store_many("a", [req("ok", W), req("bad", created_at=T0, expires_at=T0)])
    with pytest.raises(MemoryNotFoundError):
        await comp.store_many(
            "a", [req("ok", W), req("new", supersedes="0190a000-0000-7000-8000-00000000000f")]
        )
    assert await comp.count("a") == 0


async def test_supersession_within_a_child_works_and_across_children_is_refused(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, _, _ = parts
    old = await comp.store("a", req("prefers dark mode", created_at=T0))
    new = await comp.store(
        "a", req("now prefers light mode", created_at=T0 + timedelta(days=1), supersedes=old)
    )
    got = await comp.get("a", old)
    assert got is not None and got.superseded_by == new
    with pytest.raises(MemoryCapabilityError, match="across child stores"):
        await comp.store("a", req("scratch replacing a fact", W, supersedes=new))


async def test_import_skips_ids_any_child_already_holds(
    tmp_path: Path, embedder: HashingEmbedder
) -> None:
    # A working memory stored while everything went to SQLite, then working is routed away.
    durable = SQLiteBackend(tmp_path / "d.db", embedder)
    await durable.connect()
    mid = await durable.store("a", req("old scratch", W))
    entry = await durable.get("a", mid)
    await durable.disconnect()
    assert entry is not None
    comp = CompositeBackend(
        {W: InMemoryBackend(embedder)}, SQLiteBackend(tmp_path / "d.db", embedder)
    )
    await comp.connect()
    try:
        assert await comp.import_entries([entry]) == 0
        vectors = await comp.export_vectors([mid])
        assert await comp.import_with_vectors([entry], vectors) == 0
        assert await comp.count("a") == 1
        assert await comp.count("a", category=W) == 1  # still found where it lives
    finally:
        await comp.disconnect()


# -- aggregation ------------------------------------------------------------------------------


async def test_lists_and_exports_merge_the_children(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, _, _ = parts
    cats = [W, S, W, E, S, W, S]
    ids = await comp.store_many(
        "a", [req(f"note {i}", c, created_at=T0 + timedelta(hours=i)) for i, c in enumerate(cats)]
    )
    newest = list(reversed(ids))
    assert [e.id for e in await comp.list_entries("a", MemoryQuery(limit=3))] == newest[:3]
    page = await comp.list_entries("a", MemoryQuery(limit=3), offset=2)
    assert [e.id for e in page] == newest[2:5]
    only_w = await comp.list_entries("a", MemoryQuery(categories=frozenset({W})))
    assert [e.id for e in only_w] == [ids[5], ids[2], ids[0]]
    assert [e.id async for e in comp.export_entries()] == ids
    # Storage order: each child's insertion order, routed child first.
    stored = [e.id async for e in comp.export_in_storage_order()]
    assert stored == [ids[i] for i in (0, 2, 5, 1, 3, 4, 6)]
    await comp.store("b", req("b's scratch", W))
    assert await comp.agent_ids() == ["a", "b"]
    stats = await comp.stats()
    assert stats.total == 8
    assert stats.agents == 2
    assert stats.by_category == {"working": 4, "semantic": 3, "episodic": 1}
    assert stats.backend == "composite"
    assert stats.size_bytes is not None and stats.size_bytes > 0
    assert await comp.count("a", category=W) == 3
    assert await comp.clear("a", category=W) == 3
    assert await comp.clear("a") == 4
    assert await comp.count("a") == 0


async def test_early_stop_of_a_merged_export_closes_the_children(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, _, _ = parts
    await comp.store_many("a", [req(f"n{i}", W if i % 2 else S) for i in range(6)])
    stream = comp.export_entries()
    assert isinstance(await anext(stream), MemoryEntry)
    await stream.aclose()  # type: ignore[attr-defined]
    assert await comp.count("a") == 6


async def test_get_delete_and_record_access_find_the_right_child(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, _, _ = parts
    scratch, fact = await comp.store_many("a", [req("scratch", W), req("fact")])
    now = datetime.now(UTC)
    await comp.record_access("a", [scratch, fact], now)
    for mid in (scratch, fact):
        got = await comp.get("a", mid)
        assert got is not None and got.access_count == 1
    assert await comp.get("b", scratch) is None
    assert not await comp.delete("b", scratch)
    assert await comp.delete("a", scratch)
    assert await comp.delete("a", fact)
    assert not await comp.delete("a", fact)


# -- search -----------------------------------------------------------------------------------


async def test_search_merges_candidates_of_the_owning_children(
    parts: tuple[CompositeBackend, InMemoryBackend, SQLiteBackend],
) -> None:
    comp, working, durable = parts
    scratch, fact = await comp.store_many(
        "a", [req("release checklist draft for tuesday", W), req("the release happens tuesday")]
    )
    both = await comp.search_candidates("a", MemoryQuery(text="release tuesday"), pool=10)
    assert {i for i, _ in both.dense} == {scratch, fact}
    assert {i for i, _ in both.lexical} == {scratch, fact}
    assert set(both.entries) == {scratch, fact}
    assert both.query_vector is not None
    scores = [s for _, s in both.dense]
    assert scores == sorted(scores, reverse=True)
    assert len((await comp.search_candidates("a", MemoryQuery(text="release"), pool=1)).dense) == 1
    # Only the working child owns WORKING: its answer is passed through unchanged.
    q = MemoryQuery(text="release tuesday", categories=frozenset({W}))
    mine = await comp.search_candidates("a", q, pool=10)
    theirs = await working.search_candidates("a", q, pool=10)
    assert mine.dense == theirs.dense and mine.lexical == theirs.lexical
    hits = await comp.retrieve("a", MemoryQuery(text="when is the release?"))
    assert {h.id for h in hits} == {scratch, fact}
    listed = await comp.retrieve("a", MemoryQuery(limit=1))
    assert [h.id for h in listed] == [fact]
    assert await durable.count("a") == 1


# -- capabilities and construction ------------------------------------------------------------


class _Limited(InMemoryBackend):
    """An in-memory store without WORKING, with a cap and no temporal support."""

    @property
    def supported_categories(self) -> frozenset[MemoryCategory]:
        return frozenset(MemoryCategory) - {W}

    @property
    def supports_temporal(self) -> bool:
        return False


async def test_capabilities_are_the_intersection(embedder: HashingEmbedder) -> None:
    limited = _Limited(embedder, max_memories_per_agent=50)
    plain = InMemoryBackend(embedder, max_memories_per_agent=100)
    comp = CompositeBackend({W: limited, E: plain}, InMemoryBackend(embedder))
    assert isinstance(comp, MemoryStore)
    assert comp.supported_categories == frozenset(MemoryCategory) - {W}
    assert not comp.supports_temporal
    assert comp.supports_vector_search
    assert not comp.supports_graph
    assert comp.supports_shared_access  # every child keeps shared knowledge
    no_shared = InMemoryBackend(embedder, shared_knowledge=False)
    assert not CompositeBackend({E: no_shared}, plain).supports_shared_access
    assert comp.max_memories_per_agent == 50
    assert CompositeBackend({}, InMemoryBackend(embedder)).max_memories_per_agent is None
    await comp.connect()
    try:
        with pytest.raises(MemoryCapabilityError, match="does not store them"):
            await comp.store("a", req("scratch", W))
    finally:
        await comp.disconnect()


def test_children_must_share_one_embedding_model(embedder: HashingEmbedder) -> None:
    with pytest.raises(MemoryConfigError, match=r"hashing-v1-32.*hashing-v1-64"):
        CompositeBackend({W: InMemoryBackend(HashingEmbedder(32))}, InMemoryBackend(embedder))
    with pytest.raises(MemoryConfigError, match="not a MemoryStore"):
        CompositeBackend({W: object()}, InMemoryBackend(embedder))  # type: ignore[dict-item]


async def test_lifecycle(tmp_path: Path, embedder: HashingEmbedder) -> None:
    comp = CompositeBackend({W: InMemoryBackend(embedder)}, SQLiteBackend(tmp_path, embedder))
    assert not comp.is_connected
    assert not await comp.health_check()
    with pytest.raises(MemoryConnectionError):
        await comp.store("a", req("x"))
    # The SQLite child cannot open a directory: the in-process child is closed again.
    with pytest.raises(MemoryConnectionError, match="directory"):
        await comp.connect()
    assert not comp.routes[W].is_connected
    ok = CompositeBackend({W: InMemoryBackend(embedder)}, SQLiteBackend(tmp_path / "x", embedder))
    await ok.connect()
    assert await ok.health_check()
    assert ok.location == f"composite(working=memory://, default={tmp_path / 'x'})"
    await ok.disconnect()
    await ok.disconnect()
    assert not ok.is_connected


# -- configuration ----------------------------------------------------------------------------


def _config(tmp_path: Path, **composite: Any) -> MemvaultConfig:
    data = {
        "backend": "composite",
        "embedder": "hashing:64",
        "composite": {"routes": {"working": "memory://"}, **composite},
    }
    path = tmp_path / "memvault.yaml"
    import yaml

    path.write_text(yaml.safe_dump({"memory": data}), encoding="utf-8")
    return load_config(path, env={})


async def test_config_builds_a_composite_that_the_front_door_uses(tmp_path: Path) -> None:
    cfg = _config(tmp_path, default=str(tmp_path / "main.db"))
    assert cfg.resolved_url() == "composite://"
    backend = open_backend("composite://", config=cfg)
    assert isinstance(backend, CompositeBackend)
    assert isinstance(backend.routes[W], InMemoryBackend)
    assert isinstance(backend.default, SQLiteBackend)
    async with AsyncMemory(config=cfg) as mem:
        assert isinstance(mem.backend, CompositeBackend)
        await mem.add("scratch: compiling the release notes", agent_id="a", category="working")
        await mem.add("the release ships on friday", agent_id="a")
        hits = await mem.search("release", agent_id="a")
        assert len(hits) == 2
        assert (await mem.stats()).by_category == {"working": 1, "semantic": 1}
    assert (tmp_path / "main.db").exists()


def test_composite_default_falls_back_to_the_storage_url(tmp_path: Path) -> None:
    cfg = _config(tmp_path).model_copy(
        update={"storage": MemvaultConfig().storage.model_copy(update={"url": "x.db"})}
    )
    assert cfg.composite_default_url() == "x.db"
    backend = open_backend("composite://", config=cfg)
    assert isinstance(backend, CompositeBackend)
    assert backend.default.location == "x.db"


def test_routes_to_one_url_share_one_child(tmp_path: Path) -> None:
    cfg = _config(tmp_path, default="memory://")
    cfg = cfg.model_copy(
        update={
            "composite": cfg.composite.model_copy(update={"routes": {W: "memory://", E: "m.db"}})
        }
    )
    backend = open_backend("composite://", config=cfg)
    assert isinstance(backend, CompositeBackend)
    assert backend.routes[W] is backend.default
    assert len(backend.children) == 2


def test_bad_composite_configurations_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="composite"):
        load_config(env={"MEMVAULT_COMPOSITE__ROUTES__NOPE": "memory://"})
    cfg = _config(tmp_path, default="composite://")
    with pytest.raises(MemoryConfigError, match="cannot contain"):
        open_backend("composite://", config=cfg)
    cfg = _config(tmp_path, default="ftp://x")
    with pytest.raises(MemoryConfigError, match="ftp"):
        open_backend("composite://", config=cfg)


def test_each_tenant_gets_its_own_sqlite_children(tmp_path: Path) -> None:
    cfg = _config(tmp_path, default=str(tmp_path / "main.db"))
    cfg = cfg.model_copy(
        update={
            "composite": cfg.composite.model_copy(
                update={"routes": {W: "memory://", E: str(tmp_path / "episodes.db")}}
            )
        }
    )
    backend = create_memory_backend(cfg, tenant="acme")
    assert isinstance(backend, CompositeBackend)
    assert backend.default.location == str(tmp_path / "main.acme.db")
    assert backend.routes[E].location == str(tmp_path / "episodes.acme.db")
    assert backend.routes[W].location == "memory://"


def _entry(mid: str, content: str, category: MemoryCategory) -> MemoryEntry:
    return MemoryEntry(
        id=mid, agent_id="a", category=category, content=content, created_at=T0, updated_at=T0
    )
