"""Tenants are isolated: ``create_memory_backend(config, tenant=...)`` gives each company its own
store (a SQLite file, a PostgreSQL schema, an in-memory object), and nothing one tenant wrote,
private or shared, ever reaches another, even for the same agent ids.

Every read the stores offer is tried against both tenants with queries naming both companies.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memvault.backends.factory import create_memory_backend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.config import MemoryStorageConfig, MemvaultConfig
from memvault.models import MemoryEntry, MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder, SharedMemoryStore

AGENTS = ("agent-1", "agent-2")
# Words of both companies: every search tries to pull the other tenant's memories in.
QUERIES = (
    "launch code secret",
    "expense handbook approval",
    "acme globex launch code handbook expenses",
)


@dataclass
class Tenant:
    """One tenant's store and what was written to it."""

    name: str
    marker: str
    store: SharedMemoryStore
    private: dict[str, str] = field(default_factory=dict)  # agent -> its private memory id
    shared: set[str] = field(default_factory=set)
    retracted: set[str] = field(default_factory=set)

    @property
    def ids(self) -> set[str]:
        return set(self.private.values()) | self.shared | self.retracted


async def _populate(t: Tenant) -> None:
    for agent in AGENTS:
        t.private[agent] = await t.store.store(
            agent,
            MemoryStoreRequest(
                content=f"{t.marker} secret of {agent}: the launch code is {t.marker}-{agent}-42"
            ),
        )
    t.shared.add(
        await t.store.publish(
            "agent-1",
            MemoryStoreRequest(
                content=f"{t.marker} handbook: expenses are approved by the {t.marker} CFO"
            ),
        )
    )
    gone = await t.store.publish(
        "agent-2",
        MemoryStoreRequest(content=f"{t.marker} handbook draft: the launch code is public"),
    )
    assert await t.store.retract("agent-2", gone)
    t.retracted.add(gone)


def _check(
    entries: list[MemoryEntry] | tuple[MemoryEntry, ...], own: Tenant, other: Tenant
) -> None:
    for e in entries:
        assert e.id in own.ids, f"{own.name} returned a memory it does not hold: {e.content!r}"
        assert other.marker not in e.content, f"{other.name}'s data reached {own.name}"


async def _assert_isolated(own: Tenant, other: Tenant) -> None:
    s = own.store
    for text in QUERIES:
        for agent in AGENTS:
            for include_shared in (False, True):
                q = MemoryQuery(text=text, limit=50, include_shared=include_shared)
                _check(await s.retrieve(agent, q), own, other)
            cands = await s.search_candidates(
                agent, MemoryQuery(text=text), pool=50, neighbours=10, hops=2
            )
            _check(list(cands.entries.values()), own, other)
            assert set(cands.entries) <= {own.private[agent]}
        for exclude in (None, *AGENTS):
            shared = await s.search_shared(MemoryQuery(text=text, limit=50), exclude_agent=exclude)
            _check(shared, own, other)
            assert {h.id for h in shared} <= own.shared
        cands = await s.search_shared_candidates(
            MemoryQuery(text=text), pool=50, neighbours=10, hops=2
        )
        assert set(cands.entries) <= own.shared
    assert {e.id for e in await s.search_shared(MemoryQuery(limit=100))} == own.shared
    for agent in AGENTS:
        listed = await s.list_entries(agent, MemoryQuery(limit=100))
        assert [e.id for e in listed] == [own.private[agent]]
        assert await s.count(agent) == 1
        newest = await s.retrieve(agent, MemoryQuery(limit=100, include_shared=True))
        assert {e.id for e in newest} == {own.private[agent]} | own.shared
        for mid in other.ids:
            assert await s.get(agent, mid) is None
            assert not await s.delete(agent, mid)
            assert not await s.retract(agent, mid)
    exported = [e async for e in s.export_entries()]
    assert {e.id for e in exported} == own.ids
    _check(exported, own, other)
    # Private writes are audited too; no record of the other tenant's ids ever appears.
    trail = await s.audit_log(limit=1000)
    shared = {r.memory_id for r in trail if r.action.startswith("shared.")}
    assert shared == own.shared | own.retracted
    assert {r.memory_id for r in trail} == own.ids
    assert sorted(await s.agent_ids()) == list(AGENTS)
    assert (await s.stats()).total == len(own.ids)


@pytest.fixture
async def sqlite_tenants(tmp_path: Path, minilm: Embedder) -> AsyncIterator[list[Tenant]]:
    cfg = MemvaultConfig(storage=MemoryStorageConfig(url=str(tmp_path / "memvault.db")))
    tenants = []
    for name, marker in (("Acme", "acme"), ("acme", "globex")):
        # "Acme" and "acme" differ only in case: on a case-insensitive file system a naive
        # file name would merge them.
        store = create_memory_backend(cfg, embedder=minilm, tenant=name)
        assert isinstance(store, SQLiteBackend)
        assert isinstance(store, SharedMemoryStore)
        await store.connect()
        tenants.append(Tenant(name, marker, store))
    try:
        yield tenants
    finally:
        for t in tenants:
            await t.store.disconnect()


@pytest.fixture
def drop_schemas(postgres_url: str) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture
async def postgres_tenants(
    postgres_url: str, minilm: Embedder, drop_schemas: list[str]
) -> AsyncIterator[list[Tenant]]:
    cfg = MemvaultConfig(storage=MemoryStorageConfig(url=postgres_url))
    run = uuid.uuid4().hex[:8]  # the server is shared by the whole test session
    tenants = []
    for name, marker in ((f"Acme {run}", "acme"), (f"acme {run}", "globex")):
        store = create_memory_backend(cfg, embedder=minilm, tenant=name)
        assert isinstance(store, PostgresBackend)
        assert isinstance(store, SharedMemoryStore)
        drop_schemas.append(store.schema)
        await store.connect()
        tenants.append(Tenant(name, marker, store))
    try:
        yield tenants
    finally:
        for t in tenants:
            await t.store.disconnect()


@pytest.fixture
async def memory_tenants(minilm: Embedder) -> AsyncIterator[list[Tenant]]:
    cfg = MemvaultConfig(storage=MemoryStorageConfig(url="memory://"))
    tenants = []
    for name, marker in (("acme", "acme"), ("globex", "globex")):
        store = create_memory_backend(cfg, embedder=minilm, tenant=name)
        assert isinstance(store, SharedMemoryStore)
        await store.connect()
        tenants.append(Tenant(name, marker, store))
    yield tenants


async def _run(tenants: list[Tenant]) -> None:
    a, b = tenants
    # Interleaved writes, same agent ids on both sides.
    await _populate(a)
    await _populate(b)
    await _assert_isolated(a, b)
    await _assert_isolated(b, a)


async def test_sqlite_tenants_are_isolated(sqlite_tenants: list[Tenant]) -> None:
    a, b = sqlite_tenants
    assert a.store.location != b.store.location
    assert a.store.location.lower() != b.store.location.lower()
    await _run(sqlite_tenants)


@pytest.mark.postgres
async def test_postgres_tenants_are_isolated(
    postgres_tenants: list[Tenant], postgres_url: str
) -> None:
    a, b = postgres_tenants
    assert isinstance(a.store, PostgresBackend) and isinstance(b.store, PostgresBackend)
    assert a.store.schema != b.store.schema
    await _run(postgres_tenants)
    # And at rest: each tenant's schema holds only its own rows.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for own, other in ((a, b), (b, a)):
            assert isinstance(own.store, PostgresBackend)
            table = sql.Identifier(own.store.schema, "memories")
            row = conn.execute(
                sql.SQL("SELECT count(*), count(*) FILTER (WHERE content LIKE %s) FROM {}").format(
                    table
                ),
                [f"%{other.marker}%"],
            ).fetchone()
            assert row == (len(own.ids), 0)


async def test_memory_tenants_are_isolated(memory_tenants: list[Tenant]) -> None:
    await _run(memory_tenants)
