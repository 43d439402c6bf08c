"""Retention through ``AsyncMemory``: caps evict the weakest to the archive, expired entries are
swept there, everything comes back by id, and every step is in the audit log.

Also the no-loss property: any sequence of adds, deletes, evictions, consolidations, sweeps and
restores leaves every id ever stored live, archived, or deleted by request, and audited.
Real SQLite files, a real PostgreSQL schema, the in-memory store, and the real embedding model.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import AsyncMemory
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.errors import MemoryNotFoundError
from memvault.models import MemoryCategory
from memvault.protocols import Embedder, MemoryStore
from postgres_server import SchemaFactory

AGENT = "keeper"


def _config(**options: object) -> MemvaultConfig:
    return MemvaultConfig(options=MemoryOptionsConfig.model_validate(options))


@pytest.fixture
def backend(any_backend: MemoryStore) -> MemoryStore:
    return any_backend


@pytest.fixture
async def capped(backend: MemoryStore) -> AsyncIterator[AsyncMemory]:
    config = _config(max_memories_per_agent=4, max_per_category={"episodic": 2})
    async with AsyncMemory(backend=backend, config=config) as mem:
        yield mem


async def test_caps_evict_weakest_to_archive_and_restore(
    capped: AsyncMemory, caplog: pytest.LogCaptureFixture
) -> None:
    old = datetime.now(UTC) - timedelta(days=60)
    episodes = [
        await capped.add(
            f"Standup number {i}: discussed ticket PROJ-{100 + i}.",
            agent_id=AGENT,
            category="episodic",
            created_at=old + timedelta(days=i),
        )
        for i in range(3)
    ]
    # Over the episodic cap of 2: the oldest, never recalled episode went to the archive.
    assert await capped.count(agent_id=AGENT) == 2
    archived = await capped.archived(agent_id=AGENT)
    assert [a.memory_id for a in archived] == [episodes[0]]
    assert archived[0].reason == "evict"
    # Eviction is said out loud: a bulk load past a cap keeps only part of what was added.
    warned = [r.getMessage() for r in caplog.records if r.name == "memvault.memory"]
    assert any(
        "went over its memory cap (4 per agent, 2 episodic): archived 1" in m for m in warned
    ), warned

    facts = [
        await capped.add(text, agent_id=AGENT)
        for text in (
            "The build server is called hydra.",
            "Release branches are cut on Thursdays.",
            "The design system uses an 8px grid.",
        )
    ]
    assert await capped.count(agent_id=AGENT) == 4  # per-agent cap
    evicted = {a.memory_id for a in await capped.archived(agent_id=AGENT)}
    assert episodes[0] in evicted and len(evicted) == 2
    assert not evicted & set(facts[1:])  # the newest are kept

    back = await capped.restore(episodes[0], agent_id=AGENT)
    assert back.id == episodes[0] and back.content.startswith("Standup number 0")
    with pytest.raises(MemoryNotFoundError):
        await capped.restore(episodes[0], agent_id=AGENT)
    actions = [r.action for r in await capped.audit(agent_id=AGENT, memory_id=episodes[0])]
    assert actions == ["memory.store", "memory.evict", "memory.restore"]


async def test_sweep_archives_expired_by_rule_and_by_expires_at(backend: MemoryStore) -> None:
    config = _config(retention_by_category={"episodic": 7}, max_memories_per_agent=None)
    async with AsyncMemory(backend=backend, config=config) as mem:
        now = datetime.now(UTC)
        stale = await mem.add(
            "Went to the dentist.",
            agent_id=AGENT,
            category="episodic",
            created_at=now - timedelta(days=10),
        )
        recent = await mem.add("Went climbing.", agent_id=AGENT, category="episodic")
        fact = await mem.add(
            "The coffee machine is on floor 3.",
            agent_id=AGENT,
            created_at=now - timedelta(days=300),
        )
        # AsyncMemory reads the wall clock (it takes no clock), so instead of waiting for an
        # entry to lapse the test stores one written a minute ago whose expires_at has just
        # passed, beside one whose expires_at is still a day away.
        lapsing = await mem.add(
            "Temporary door code is 4412.",
            agent_id=AGENT,
            created_at=now - timedelta(minutes=1),
            expires_at=now - timedelta(seconds=1),
        )
        lasting = await mem.add(
            "Visitor badge for the auditors is number 7.",
            agent_id=AGENT,
            expires_at=now + timedelta(days=1),
        )
        # Read time already hides the lapsed entry; the sweep moves it to the archive.
        assert lapsing not in {e.id for e in await mem.search("door code", agent_id=AGENT)}
        assert lasting in {e.id for e in await mem.search("visitor badge", agent_id=AGENT)}
        report = await mem.sweep(agent_id=AGENT)
        assert set(report.expired) == {stale, lapsing}
        assert report.evicted == {}
        live = {e.id for e in await mem.list(agent_id=AGENT, limit=50)}
        assert live == {recent, fact, lasting}
        reasons = {a.memory_id: a.reason for a in await mem.archived(agent_id=AGENT)}
        assert reasons == {stale: "expire", lapsing: "expire"}
        assert (await mem.sweep(agent_id=AGENT)).total == 0


async def test_delete_and_clear_are_audited(backend: MemoryStore) -> None:
    async with AsyncMemory(backend=backend) as mem:
        a = await mem.add("Lunch order: falafel wrap.", agent_id=AGENT)
        await mem.add("Parking spot B12.", agent_id=AGENT, category=MemoryCategory.WORKING)
        assert await mem.delete(a, agent_id=AGENT)
        assert await mem.clear(agent_id=AGENT) == 1
        trail = await mem.audit(agent_id=AGENT)
        assert [r.action for r in trail] == [
            "memory.store",
            "memory.store",
            "memory.delete",
            "memory.clear",
        ]
        assert trail[2].memory_id == a and trail[3].details["count"] == 1
        assert await mem.audit(agent_id="nobody") == []


# -- the no-loss property ------------------------------------------------------------------------

_OP_NAMES = ["add", "add", "add", "delete", "evict", "consolidate", "restore", "sweep"]
OPS = st.lists(
    st.tuples(
        st.sampled_from(_OP_NAMES),
        st.integers(min_value=0, max_value=1_000),
    ),
    min_size=1,
    max_size=20,
)


async def _run_ops(mem: AsyncMemory, ops: list[tuple[str, int]]) -> None:
    created: list[str] = []
    deleted: set[str] = set()
    for step, (op, n) in enumerate(ops):
        live = [e.id for e in await mem.list(agent_id=AGENT, limit=1000, include_superseded=True)]
        archived = [a.memory_id for a in await mem.archived(agent_id=AGENT, limit=1000)]
        if op == "add":
            new = await mem.add(f"Note {step}: item {n} is in bin {n % 7}.", agent_id=AGENT)
            if new not in created:
                created.append(new)
        elif op == "delete" and live:
            target = live[n % len(live)]
            assert await mem.delete(target, agent_id=AGENT)
            deleted.add(target)
        elif op == "evict" and live:
            await mem.archive([live[n % len(live)]], agent_id=AGENT, reason="evict")
        elif op == "consolidate" and len(live) >= 2:
            group = [live[n % len(live)], live[(n + 1) % len(live)]]
            # Synthesise -> store -> archive the originals (the consolidation ordering).
            await mem.add(f"Summary {step} of {len(group)} notes.", agent_id=AGENT, dedup=False)
            summary = (await mem.list(agent_id=AGENT, limit=1))[0].id
            created.append(summary)
            await mem.archive(group, agent_id=AGENT, reason="consolidate")
        elif op == "restore" and archived:
            await mem.restore(archived[n % len(archived)], agent_id=AGENT)
        elif op == "sweep":
            await mem.sweep(agent_id=AGENT)

    live_now = {e.id for e in await mem.list(agent_id=AGENT, limit=1000, include_superseded=True)}
    archived_now = {a.memory_id for a in await mem.archived(agent_id=AGENT, limit=1000)}
    trail = await mem.audit(agent_id=AGENT, limit=100_000)
    stored = {r.memory_id for r in trail if r.action == "memory.store"}
    deletes = {r.memory_id for r in trail if r.action == "memory.delete"}
    for memory_id in created:
        states = [memory_id in live_now, memory_id in archived_now, memory_id in deleted]
        assert sum(states) == 1, (memory_id, states)
        assert memory_id in stored
    assert deleted == deletes
    assert not live_now & archived_now


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_no_sequence_of_operations_loses_an_entry_sqlite(
    ops: list[tuple[str, int]], minilm: Embedder
) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            config = _config(max_memories_per_agent=6)
            backend = SQLiteBackend(Path(tmp) / "p.db", minilm)
            async with AsyncMemory(backend=backend, config=config) as mem:
                await _run_ops(mem, ops)

    asyncio.run(run())


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_no_sequence_of_operations_loses_an_entry_postgres(
    ops: list[tuple[str, int]], minilm: Embedder, pg_schemas: SchemaFactory
) -> None:
    async def run() -> None:
        config = _config(max_memories_per_agent=6)
        backend = PostgresBackend(pg_schemas.url, minilm, schema=pg_schemas())
        async with AsyncMemory(backend=backend, config=config) as mem:
            await _run_ops(mem, ops)

    asyncio.run(run())
