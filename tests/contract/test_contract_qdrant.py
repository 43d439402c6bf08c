"""The Qdrant backend (local on-disk mode, real qdrant-client) passes the full contract suite."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memvault.backends.factory import open_backend, parse_url, tenant_url
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import (
    EmbeddingModelChangedError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConnectionError,
)
from memvault.models import (
    MemoryCategory,
    MemoryMetadata,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import Embedder, MemoryStore, ReindexableStore
from memvault.testing import BackendContract, BackendFactory

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

from memvault.backends.qdrant import QdrantBackend


class TestQdrantContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))
        return lambda embedder: QdrantBackend(tmp_path / f"qdrant-{next(counter)}", embedder)


# -- beyond the contract: durability, locking, models, URLs ----------------------------------------

T0 = datetime(2025, 3, 1, 8, 0, 0, 123456, tzinfo=UTC)


def _make(kind: str, directory: Path, embedder: Embedder) -> MemoryStore:
    if kind == "mem0":
        pytest.importorskip("mem0", reason="the mem0 extra is not installed")
        from memvault.backends.mem0 import Mem0Backend

        return Mem0Backend(directory, embedder)
    return QdrantBackend(directory, embedder)


async def _state(store: MemoryStore) -> dict[str, object]:
    entries = [e.to_json() async for e in store.export_entries()]
    order = [e.id async for e in store.export_in_storage_order()]
    vectors = await store.export_vectors(order)
    rows = {}
    for table in ("audit", "archive"):
        rows[table] = sorted(
            [r async for r in store.export_rows(table)],  # type: ignore[attr-defined]
            key=lambda r: str(r.get("id") or r.get("archive_id")),
        )
    hits = await store.retrieve("a", MemoryQuery(text="which web framework?", limit=3))
    return {
        "entries": entries,
        "order": order,
        "vectors": {k: v.tobytes() for k, v in vectors.items()},
        "rows": rows,
        "hits": [h.id for h in hits],
    }


@pytest.mark.parametrize("kind", ["qdrant", "mem0"])
async def test_everything_survives_a_reconnect(kind: str, tmp_path: Path, minilm: Embedder) -> None:
    store = _make(kind, tmp_path / "store", minilm)
    await store.connect()
    try:
        ids = await store.store_many(
            "a",
            [
                MemoryStoreRequest(
                    content="The user prefers Litestar over Flask for web services.",
                    category=MemoryCategory.SEMANTIC,
                    metadata=MemoryMetadata(tags=("web",), extra={"n": 3, "x": 1.5}),
                    created_at=T0,
                    expires_at=T0 + timedelta(days=3650),
                ),
                MemoryStoreRequest(
                    content="Deployed v2.1 and rolled back.",
                    category=MemoryCategory.EPISODIC,
                    created_at=T0,
                ),
                MemoryStoreRequest(content="Ticket XK-4471 tracks the flaky login test."),
            ],
        )
        await store.store(
            "a", MemoryStoreRequest(content="Deployed v2.2 without problems.", supersedes=ids[1])
        )
        await store.store("b", MemoryStoreRequest(content="b's private note"))
        await store.record_access("a", [ids[0]], T0 + timedelta(days=1), times=2)
        await store.mark_consolidated("a", [ids[2]], T0)  # type: ignore[attr-defined]
        shared = await store.publish("a", MemoryStoreRequest(content="Deploys need a canary."))  # type: ignore[attr-defined]
        kept = await store.publish("b", MemoryStoreRequest(content="Billing is written in Go."))  # type: ignore[attr-defined]
        assert await store.retract("a", shared)  # type: ignore[attr-defined]
        await store.archive("b", [await _first_private(store, "b")], reason="evicted")  # type: ignore[attr-defined]
        await store.clear("a", category=MemoryCategory.EPISODIC)
        before = await _state(store)
    finally:
        await store.disconnect()
    assert len(before["entries"]) == 5  # type: ignore[arg-type]
    again = _make(kind, tmp_path / "store", minilm)
    await again.connect()
    try:
        assert await _state(again) == before
        got = await again.get("a", ids[0])
        assert got is not None and got.access_count == 2
        shared_entry = await again.get("a", shared)
        assert shared_entry is not None and shared_entry.retracted_at is not None
        hits = await again.search_shared(MemoryQuery(text="billing language"))  # type: ignore[attr-defined]
        assert [h.id for h in hits] == [kept]
        # New writes continue the insertion order after the reloaded ones.
        late = await again.store("a", MemoryStoreRequest(content="written after reopening"))
        assert [e.id async for e in again.export_in_storage_order("a")][-1] == late
    finally:
        await again.disconnect()


async def _first_private(store: MemoryStore, agent: str) -> str:
    rows = await store.list_entries(agent, MemoryQuery(limit=1))
    return rows[0].id


async def test_a_directory_in_use_is_refused_until_released(
    tmp_path: Path, minilm: Embedder
) -> None:
    first = QdrantBackend(tmp_path / "q", minilm)
    await first.connect()
    second = QdrantBackend(tmp_path / "q", minilm)
    try:
        with pytest.raises(MemoryConnectionError, match="in use"):
            await second.connect()
        assert not second.is_connected
    finally:
        await first.disconnect()
    await second.connect()
    assert await second.health_check()
    await second.disconnect()
    assert not await second.health_check()


async def test_a_store_of_another_model_is_refused(tmp_path: Path, minilm: Embedder) -> None:
    store = QdrantBackend(tmp_path / "q", minilm)
    await store.connect()
    await store.store("a", MemoryStoreRequest(content="made with MiniLM"))
    await store.disconnect()
    other = QdrantBackend(tmp_path / "q", HashingEmbedder(dimension=minilm.dimension))
    with pytest.raises(EmbeddingModelChangedError):
        await other.connect()
    assert not other.is_connected


async def test_reindex_is_declared_unsupported(tmp_path: Path, minilm: Embedder) -> None:
    # The mirror could swap vectors in process only; the capability is refused, not faked.
    from memvault.reindex import _leaves

    store = QdrantBackend(tmp_path / "q", minilm)
    assert not isinstance(store, ReindexableStore)
    with pytest.raises(MemoryCapabilityError, match="does not support reindex"):
        _leaves(store)


async def test_an_unreachable_server_is_a_connection_error(minilm: Embedder) -> None:
    store = QdrantBackend("http://127.0.0.1:9", minilm, collection="t1")
    assert store.location == "qdrant+http://127.0.0.1:9?collection=t1"
    with pytest.raises(MemoryConnectionError, match=r"127\.0\.0\.1:9"):
        await store.connect()
    assert not store.is_connected


def test_storage_urls(tmp_path: Path, minilm: Embedder) -> None:
    assert parse_url("qdrant:///abs/dir") == ("qdrant", "/abs/dir")
    assert parse_url("qdrant://rel/dir") == ("qdrant", "rel/dir")
    assert parse_url("qdrant+http://host:6333") == ("qdrant", "http://host:6333")
    assert parse_url("qdrant+https://host:6333?collection=c") == (
        "qdrant",
        "https://host:6333?collection=c",
    )
    assert parse_url("mem0:///data/m0") == ("mem0", "/data/m0")
    for bad in ("qdrant://", "mem0:///", "qdrant:///d?color=red", "qdrant+ftp://h"):
        with pytest.raises(MemoryConfigError):
            parse_url(bad)
    store = open_backend(f"qdrant://{tmp_path}/q?collection=team.a", embedder=minilm)
    assert isinstance(store, QdrantBackend)
    assert store.location == f"qdrant://{tmp_path}/q?collection=team.a"
    server = open_backend("qdrant+https://qd.example:6333/", embedder=minilm)
    assert server.location == "qdrant+https://qd.example:6333?collection=memvault"
    with pytest.raises(MemoryConfigError, match="collection"):
        open_backend(f"qdrant://{tmp_path}/q?collection=a%2Fb", embedder=minilm)
    # Tenants: a directory of their own beside a local store, collections of their own on a
    # server.
    assert tenant_url(f"qdrant://{tmp_path}/q", "acme") == f"qdrant://{tmp_path}/q.acme"
    assert tenant_url(f"mem0://{tmp_path}/m/", "Acme Inc").startswith(f"mem0://{tmp_path}/m.")
    assert (
        tenant_url("qdrant+http://h:6333?collection=base", "acme")
        == "qdrant+http://h:6333?collection=base_acme"
    )


async def test_tenants_never_see_each_other(tmp_path: Path, minilm: Embedder) -> None:
    url = f"qdrant://{tmp_path}/q"
    acme = open_backend(tenant_url(url, "acme"), embedder=minilm)
    globex = open_backend(tenant_url(url, "globex"), embedder=minilm)
    await acme.connect()
    await globex.connect()
    try:
        await acme.store("agent", MemoryStoreRequest(content="acme's secret roadmap"))
        assert await globex.count("agent") == 0
        assert await globex.retrieve("agent", MemoryQuery(text="secret roadmap")) == ()
        assert await acme.count("agent") == 1
    finally:
        await acme.disconnect()
        await globex.disconnect()


def test_a_missing_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, minilm: Embedder
) -> None:
    for name in list(sys.modules):
        if name.startswith(("memvault.backends.qdrant", "memvault.backends.mem0")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(MemoryConfigError, match=r"pip install 'memvault\[qdrant\]'"):
        open_backend(f"qdrant://{tmp_path}/q", embedder=minilm)
    monkeypatch.setitem(sys.modules, "mem0", None)
    with pytest.raises(MemoryConfigError, match=r"memvault\["):
        open_backend(f"mem0://{tmp_path}/m", embedder=minilm)


def test_import_memvault_imports_neither_package() -> None:
    import subprocess

    code = (
        "import sys, memvault, memvault.backends.factory; "
        "print(sorted(m for m in ('qdrant_client', 'mem0') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_vectors_are_stored_bit_exactly_in_qdrant(tmp_path: Path, minilm: Embedder) -> None:
    # Read back with qdrant-client itself, not through the backend's mirror.
    import asyncio

    from qdrant_client import QdrantClient

    async def write() -> dict[str, np.ndarray]:
        store = QdrantBackend(tmp_path / "q", minilm)
        await store.connect()
        ids = await store.store_many(
            "a", [MemoryStoreRequest(content=f"note {i} about cats") for i in range(3)]
        )
        vecs = await store.export_vectors(ids)
        await store.disconnect()
        return vecs

    vecs = asyncio.run(write())
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        points = client.retrieve("memvault_memories", ids=list(vecs), with_vectors=True)
    finally:
        client.close()
    assert len(points) == 3
    for p in points:
        assert np.asarray(p.vector, dtype=np.float32).tobytes() == vecs[str(p.id)].tobytes()


@pytest.mark.parametrize("kind", ["qdrant", "mem0"])
def test_working_memory_is_never_persisted(kind: str, tmp_path: Path) -> None:
    # The seed: WORKING memory lives in process unless routed to a durable store explicitly.
    # The adapters mirror into in-memory structures, but they are durable stores.
    if kind == "mem0":
        pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    from memvault import Memory

    url = f"{kind}://{tmp_path}/store"
    with Memory(url) as mem:
        mem.add("the durable fact about Litestar", agent_id="a")
        mem.add("scratch: current task is step 3", agent_id="a", category="working")
        assert mem.count(agent_id="a") == 2
    with Memory(url) as mem:
        assert [e["content"] for e in mem.export()] == ["the durable fact about Litestar"]


def test_side_tables_live_in_a_sqlite_file_in_the_store_directory(tmp_path: Path) -> None:
    from memvault.backends.factory import side_store_url

    assert side_store_url(f"qdrant://{tmp_path}/q") == f"{tmp_path}/q/memvault-side.db"
    assert side_store_url(f"mem0://{tmp_path}/m?collection=t") == (
        f"{tmp_path}/m/memvault-side.t.db"
    )
    for url in (f"{tmp_path}/a.db", "memory://", "postgresql://u@h/db"):
        assert side_store_url(url) == url
    with pytest.raises(MemoryConfigError, match="server"):
        side_store_url("qdrant+http://h:6333")
