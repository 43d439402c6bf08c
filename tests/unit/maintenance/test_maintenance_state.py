"""The maintenance state: last runs and the one-runner lease, in process and in a SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault.errors import MemoryConfigError, MemoryConnectionError
from memvault.maintenance import (
    InMemoryMaintenanceState,
    MaintenanceState,
    SQLiteMaintenanceState,
    open_maintenance_state,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MaintenanceState]:
    made: MaintenanceState = (
        InMemoryMaintenanceState()
        if request.param == "memory"
        else SQLiteMaintenanceState(tmp_path / "s.db")
    )
    yield made
    await made.close()


async def test_last_runs_per_job_and_agent(state: MaintenanceState) -> None:
    assert await state.last_run("sweep", "a") is None
    await state.record_run("sweep", "a", T0)
    await state.record_run("sweep", "b", T0 + timedelta(hours=1))
    await state.record_run("evolve", "", T0)
    await state.record_run("sweep", "a", T0 + timedelta(days=1))  # the newer run replaces it
    assert await state.last_run("sweep", "a") == T0 + timedelta(days=1)
    assert await state.last_runs("sweep") == {
        "a": T0 + timedelta(days=1),
        "b": T0 + timedelta(hours=1),
    }
    assert await state.last_run("evolve") == T0
    assert await state.last_runs("consolidate") == {}


async def test_lease_is_exclusive_renewable_and_expires(state: MaintenanceState) -> None:
    assert await state.lease() is None
    assert await state.acquire("a", T0, 60)
    assert not await state.acquire("b", T0 + timedelta(seconds=59), 60)
    assert await state.acquire("a", T0 + timedelta(seconds=30), 60)  # renewal: until T0+90s
    assert not await state.acquire("b", T0 + timedelta(seconds=89), 60)
    lease = await state.lease()
    assert lease is not None and lease.holder == "a"
    assert lease.expires_at == T0 + timedelta(seconds=90)
    assert await state.acquire("b", T0 + timedelta(seconds=90), 60)  # a's lease ran out
    await state.release("a")  # not a's any more: nothing happens
    assert (await state.lease()).holder == "b"  # type: ignore[union-attr]
    await state.release("b")
    assert await state.lease() is None
    assert await state.acquire("a", T0, 60)


async def test_sqlite_records_are_shared_by_every_connection(tmp_path: Path) -> None:
    one, two = SQLiteMaintenanceState(tmp_path / "s.db"), SQLiteMaintenanceState(tmp_path / "s.db")
    try:
        assert await one.acquire("server-1", T0, 600)
        assert not await two.acquire("server-2", T0, 600)
        await one.record_run("consolidate", "a", T0)
        assert await two.last_runs("consolidate") == {"a": T0}
    finally:
        await one.close()
        await two.close()


async def test_closed_sqlite_state_raises_a_connection_error(tmp_path: Path) -> None:
    state = SQLiteMaintenanceState(tmp_path / "s.db")
    await state.close()
    with pytest.raises(MemoryConnectionError):
        await state.acquire("a", T0, 60)


def test_open_maintenance_state_follows_the_store_url(tmp_path: Path) -> None:
    assert isinstance(open_maintenance_state(None), InMemoryMaintenanceState)
    assert isinstance(open_maintenance_state("memory://"), InMemoryMaintenanceState)
    path = tmp_path / "x.db"
    for url in (str(path), f"sqlite:///{path}"):
        found = open_maintenance_state(url)
        assert isinstance(found, SQLiteMaintenanceState) and found.location == str(path)
    with pytest.raises(MemoryConfigError):
        open_maintenance_state("ftp://example.org/store")
