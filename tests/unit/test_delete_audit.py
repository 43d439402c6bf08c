"""``AsyncMemory.delete`` leaves exactly one audit record on every backend kind of the contract
suite, and does not pass a second record of its own to a store that audits deletions in the
deletion's transaction (the store would only recognise it and drop it: a wasted call).

Real stores: SQLite files, a PostgreSQL schema, the in-process store, a composite of the two,
Qdrant's local mode and mem0's local mode, all with the real embedding model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memvault import AsyncMemory
from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.models import AuditRecord, MemoryCategory
from memvault.protocols import Embedder, MemoryStore

AGENT = "dev-1"

# Whether each kind writes the delete's audit record itself, in the deletion's transaction.
SELF_AUDITING = {
    "memory": True,
    "sqlite": True,
    "composite": True,
    "postgres": True,
    "qdrant": False,
    "mem0": False,
}


@pytest.fixture
def pg_schemas(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    from postgres_server import SchemaFactory

    factory = SchemaFactory(request.getfixturevalue("postgres_url"))
    yield factory
    factory.drop_all()


def _backend(kind: str, request: pytest.FixtureRequest, tmp: Path, embedder: Embedder) -> Any:
    if kind == "memory":
        return InMemoryBackend(embedder)
    if kind == "sqlite":
        return SQLiteBackend(tmp / "store.db", embedder)
    if kind == "composite":
        return CompositeBackend(
            {MemoryCategory.WORKING: InMemoryBackend(embedder)},
            SQLiteBackend(tmp / "composite.db", embedder),
        )
    if kind == "postgres":
        from memvault.backends.postgres import PostgresBackend

        url = request.getfixturevalue("postgres_url")
        return PostgresBackend(url, embedder, schema=request.getfixturevalue("pg_schemas")())
    if kind == "qdrant":
        pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
        from memvault.backends.qdrant import QdrantBackend

        return QdrantBackend(tmp / "qdrant", embedder)
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    from memvault.backends.mem0 import Mem0Backend

    return Mem0Backend(tmp / "mem0", embedder)


def _spy_on_audit(backend: Any) -> list[AuditRecord]:
    """The records callers pass to ``backend.record_audit`` from now on (still written)."""
    passed: list[AuditRecord] = []
    record = backend.record_audit

    async def spy(records: Sequence[AuditRecord]) -> None:
        passed.extend(records)
        await record(records)

    backend.record_audit = spy
    return passed


@pytest.mark.parametrize(
    "kind",
    [
        "memory",
        "sqlite",
        "composite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        "qdrant",
        "mem0",
    ],
)
@pytest.mark.parametrize("category", [MemoryCategory.SEMANTIC, MemoryCategory.WORKING])
async def test_one_delete_yields_exactly_one_audit_record(
    kind: str,
    category: MemoryCategory,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    minilm: Embedder,
) -> None:
    backend = _backend(kind, request, tmp_path, minilm)
    assert backend.audits_deletions is SELF_AUDITING[kind]
    passed = _spy_on_audit(backend)
    store: MemoryStore = backend
    async with AsyncMemory(backend=store) as mem:
        gone = await mem.add(
            "The old VPN password hint.", agent_id=AGENT, category=category, dedup=False
        )
        kept = await mem.add("The VPN moved to vpn2.", agent_id=AGENT, dedup=False)
        assert await mem.delete(gone, agent_id=AGENT)
        assert not await mem.delete(gone, agent_id=AGENT)  # nothing deleted: nothing audited

        trail = await backend.audit_log(memory_id=gone)
        deletes = [r for r in trail if r.action == "memory.delete"]
        assert [(r.agent_id, r.memory_id) for r in deletes] == [(AGENT, gone)]
        # The caller passes its own record only to a store that does not write one itself.
        ours = [r for r in passed if r.action == "memory.delete"]
        assert len(ours) == (0 if SELF_AUDITING[kind] else 1)
        assert (await mem.get(kept, agent_id=AGENT)).id == kept


@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", "composite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_one_clear_yields_exactly_one_audit_record(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder
) -> None:
    backend = _backend(kind, request, tmp_path, minilm)
    passed = _spy_on_audit(backend)
    store: MemoryStore = backend
    async with AsyncMemory(backend=store) as mem:
        items = [{"content": t, "category": "episodic"} for t in ("Met Bob.", "Met Carol.")]
        await mem.add_many(items, agent_id=AGENT)
        assert await mem.clear(agent_id=AGENT, category="episodic") == 2
        clears = [r for r in await backend.audit_log(limit=100) if r.action == "memory.clear"]
        assert [(r.agent_id, r.details["count"]) for r in clears] == [(AGENT, 2)]
        assert not [r for r in passed if r.action == "memory.clear"]


async def test_self_audited_bookkeeping_stays_bounded(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Callers that know the store audits deletions pass no record, so nothing would ever
    # consume the store's note of each deletion: the notes must not grow with the process.
    from memvault.backends import _base

    monkeypatch.setattr(_base, "_SELF_AUDITED_KEPT", 4)
    backend = SQLiteBackend(tmp_path / "store.db", minilm)
    async with AsyncMemory(backend=backend) as mem:
        items = [{"content": f"note number {i}"} for i in range(10)]
        ids = await mem.add_many(items, agent_id=AGENT, dedup=False)
        for mid in ids:
            assert await mem.delete(mid, agent_id=AGENT)
        assert len(backend._self_audited) == 4
        # The newest deletion is still recognised when a caller passes its record after all.
        last = await backend.audit_log(memory_id=ids[-1])
        await backend.record_audit([last[0].model_copy(update={"id": "other"})])
        trail = await backend.audit_log(memory_id=ids[-1])
        assert [r.action for r in trail].count("memory.delete") == 1
