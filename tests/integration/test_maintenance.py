"""The maintenance scheduler on real stores: it consolidates and sweeps by itself on a fake clock,
keeps its last-run times in the store (a restart does not rerun what is not due), and one lease
per store keeps two runners from both running a pass.

Real SQLite files, a real PostgreSQL schema, the real embedding model; only the clock is fake.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.backends.postgres import PostgresBackend
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.maintenance import (
    MaintenanceConfig,
    MaintenanceScheduler,
    PostgresMaintenanceState,
    SQLiteMaintenanceState,
)
from memvault.maintenance.scheduler import JOB_CONSOLIDATE, JOB_SWEEP
from memvault.protocols import Embedder
from postgres_server import SchemaFactory

AGENT = "ops-bot"


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


def _config() -> MemvaultConfig:
    return MemvaultConfig(
        options=MemoryOptionsConfig(
            consolidation_interval="daily",  # type: ignore[arg-type]
            retention_by_category={"semantic": 30},  # type: ignore[dict-item]
        ),
        maintenance=MaintenanceConfig(sweep_interval="daily"),  # type: ignore[arg-type]
    )


@pytest.fixture
async def store(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(str(tmp_path / "store.db"), config=_config(), embedder=minilm) as mem:
        yield mem


async def _episodes(mem: AsyncMemory, n: int, start: int = 0) -> list[str]:
    # Two months old: past consolidation's minimum age (30 days), so passes merge them.
    old = datetime.now(UTC) - timedelta(days=60)
    return [
        await mem.add(
            f"Incident {i}: the nightly backup job on host db-{i} timed out after {30 + i} min.",
            agent_id=AGENT,
            category="episodic",
            dedup=False,
            created_at=old + timedelta(minutes=i),
        )
        for i in range(start, start + n)
    ]


async def test_scheduler_consolidates_and_sweeps_without_any_explicit_call(
    store: AsyncMemory, tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    scheduler = MaintenanceScheduler(store, now=clock)
    await _episodes(store, 1)
    first = await scheduler.tick()  # never ran: both jobs run now (nothing to merge yet)
    assert first.ran and [c.agent_id for c in first.consolidated] == [AGENT]
    assert [s.agent_id for s in first.swept] == [AGENT]

    # The day's memories: more episodes, and a fact older than its 30-day rule.
    await _episodes(store, 4, start=1)
    stale = await store.add(
        "The old VPN gateway address is 10.0.0.1.",
        agent_id=AGENT,
        category="semantic",
        created_at=datetime.now(UTC) - timedelta(days=90),
    )
    clock.advance(hours=1)
    early = await scheduler.tick()
    assert early.ran and early.consolidated == () and early.swept == ()  # not due yet
    assert len(await store.list(agent_id=AGENT, category="episodic", limit=50)) == 5

    clock.advance(days=1)
    with caplog.at_level(logging.INFO, logger="memvault.maintenance"):
        report = await scheduler.tick()
    assert report.errors == ()
    (run,) = report.consolidated
    assert run.created == 1 and run.archived >= 3  # five episodes became fewer
    live = await store.list(agent_id=AGENT, category="episodic", limit=50)
    assert len(live) < 5
    (sweep,) = report.swept
    assert sweep.expired == 1
    archived = {a.memory_id: a for a in await store.archived(agent_id=AGENT)}
    assert archived[stale].reason == "expire"
    lines = [r.getMessage() for r in caplog.records if r.name == "memvault.maintenance"]
    assert len(lines) == 1 and "consolidated 1" in lines[0] and "1 expired" in lines[0]
    await scheduler.close()

    # Restart: a new process over the same file finds the runs in the store, so nothing is due.
    async with AsyncMemory(str(tmp_path / "store.db"), config=_config(), embedder=minilm) as again:
        restarted = MaintenanceScheduler(again, now=clock)
        after = await restarted.tick()
        assert after.ran and after.consolidated == () and after.swept == ()
        runs = await restarted.state.last_runs(JOB_CONSOLIDATE)
        assert runs[AGENT] == clock.at
        clock.advance(days=1, seconds=1)
        assert (await restarted.tick()).consolidated != ()
        await restarted.close()


async def test_force_runs_every_job(store: AsyncMemory) -> None:
    clock = FakeClock()
    scheduler = MaintenanceScheduler(store, now=clock)
    await _episodes(store, 4)
    assert (await scheduler.tick()).consolidated != ()
    again = await scheduler.run_pass(force=True)
    assert again.forced and [c.agent_id for c in again.consolidated] == [AGENT]
    assert [s.agent_id for s in again.swept] == [AGENT]
    await scheduler.close()


async def test_a_held_lease_stops_a_second_runner(store: AsyncMemory, tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "store.db"
    other = SQLiteMaintenanceState(path)  # another server on the same file
    assert await other.acquire("server-b", clock(), 600)
    scheduler = MaintenanceScheduler(store, SQLiteMaintenanceState(path), now=clock)
    await _episodes(store, 4)
    blocked = await scheduler.tick()
    assert not blocked.ran and blocked.lease_holder == "server-b"
    assert await scheduler.state.last_runs(JOB_CONSOLIDATE) == {}
    assert len(await store.list(agent_id=AGENT, limit=50)) == 4  # nothing touched

    clock.advance(seconds=601)  # server-b crashed: its lease expires
    taken = await scheduler.tick()
    assert taken.ran and taken.consolidated != ()
    assert await other.lease() is None  # released after the pass
    await other.close()
    await scheduler.close()


async def test_two_runners_at_once_run_each_job_once(store: AsyncMemory, tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "store.db"
    await _episodes(store, 4)
    a = MaintenanceScheduler(store, SQLiteMaintenanceState(path), now=clock, holder="a")
    b = MaintenanceScheduler(store, SQLiteMaintenanceState(path), now=clock, holder="b")
    reports = await asyncio.gather(a.tick(), b.tick(), a.tick(), b.tick())
    assert sum(len(r.consolidated) for r in reports) == 1
    assert sum(len(r.swept) for r in reports) == 1
    await a.close()
    await b.close()


async def test_postgres_state_keeps_runs_and_one_lease(
    postgres_url: str, pg_schemas: SchemaFactory, minilm: Embedder
) -> None:
    schema = pg_schemas()
    clock = FakeClock()
    one = PostgresMaintenanceState(postgres_url, schema=schema)
    two = PostgresMaintenanceState(postgres_url, schema=schema)
    try:
        results = await asyncio.gather(
            *(
                s.acquire(s.location + str(i), clock(), 60)
                for i, s in enumerate([one, two, one, two])
            )
        )
        assert sum(results) == 1  # exactly one holder, however they race
        holder = (await one.lease()).holder  # type: ignore[union-attr]
        assert not await two.acquire("late", clock(), 60)
        assert await two.acquire("late", clock() + timedelta(seconds=61), 60)  # expired
        assert (await one.lease()).holder == "late"  # type: ignore[union-attr]
        assert holder != "late"
        await two.release("late")
        assert await one.lease() is None
        await one.record_run(JOB_SWEEP, AGENT, clock())
        assert await two.last_run(JOB_SWEEP, AGENT) == clock()
        assert await two.last_runs(JOB_SWEEP) == {AGENT: clock()}

        backend = PostgresBackend(postgres_url, minilm, schema=schema)
        async with AsyncMemory(backend=backend, config=_config()) as mem:
            await _episodes(mem, 4)
            scheduler = MaintenanceScheduler(mem, one, now=clock)
            report = await scheduler.tick()
            assert report.ran and [c.agent_id for c in report.consolidated] == [AGENT]
            assert await two.last_run(JOB_CONSOLIDATE, AGENT) == clock()
    finally:
        await one.close()
        await two.close()
