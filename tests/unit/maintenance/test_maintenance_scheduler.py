"""The scheduler's rules on an in-memory store: failures are contained, the evolver runs on its
own interval, force runs everything, a broken state never raises into the caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.config import MemvaultConfig
from memvault.maintenance import (
    InMemoryMaintenanceState,
    MaintenanceScheduler,
    SQLiteMaintenanceState,
    consolidate_on,
)
from memvault.maintenance.scheduler import JOB_CONSOLIDATE, JOB_EVOLVE, JOB_SWEEP
from memvault.protocols import Embedder

AGENT = "a1"


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at


def _config(**sections: object) -> MemvaultConfig:
    return MemvaultConfig.model_validate(sections)


@pytest.fixture
async def mem(minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    config = _config(
        options={"consolidation_interval": "hourly"},
        maintenance={"consolidation_strategy": "llm", "sweep_interval": "daily"},
        procedural={"evolver": {"enabled": True}},
    )
    async with AsyncMemory("memory://", config=config, embedder=minilm) as memory:
        for i in range(4):
            await memory.add(f"Note {i}: ticket PROJ-{i} closed.", agent_id=AGENT, dedup=False)
        yield memory


async def test_a_failing_job_is_logged_and_the_others_still_run(mem: AsyncMemory) -> None:
    clock = Clock()
    scheduler = MaintenanceScheduler(mem, now=clock)
    assert isinstance(scheduler.state, InMemoryMaintenanceState)  # memory:// keeps it in process
    report = await scheduler.tick()
    assert report.ran and report.consolidated == ()
    assert len(report.errors) == 1 and report.errors[0].startswith(f"consolidate {AGENT}:")
    assert [s.agent_id for s in report.swept] == [AGENT]
    assert report.evolver is not None and report.evolver.error is None
    # The failed job is not recorded, so it is retried; the others are.
    assert await scheduler.state.last_runs(JOB_CONSOLIDATE) == {}
    assert await scheduler.state.last_runs(JOB_SWEEP) == {AGENT: clock.at}
    assert await scheduler.state.last_run(JOB_EVOLVE) == clock.at
    assert len(await mem.list(agent_id=AGENT, limit=10)) == 4  # nothing lost
    assert "1 error(s)" in report.summary() and "evolver ran" in report.summary()


async def test_each_job_follows_its_own_interval(mem: AsyncMemory) -> None:
    clock = Clock()
    scheduler = MaintenanceScheduler(mem, now=clock)
    await scheduler.tick()
    clock.at += timedelta(hours=2)
    later = await scheduler.tick()
    assert later.swept == () and later.evolver is None  # daily: not yet
    assert len(later.errors) == 1  # consolidation is hourly (and still failing): retried
    clock.at += timedelta(days=1)
    day = await scheduler.tick()
    assert [s.agent_id for s in day.swept] == [AGENT] and day.evolver is not None
    forced = await scheduler.run_pass(force=True)
    assert forced.swept != () and forced.evolver is not None


async def test_evolver_is_skipped_when_disabled(minilm: Embedder) -> None:
    async with AsyncMemory("memory://", config=_config(), embedder=minilm) as memory:
        await memory.add("A note.", agent_id=AGENT)
        report = await MaintenanceScheduler(memory, now=Clock()).run_pass(force=True)
        assert report.evolver is None and report.errors == ()


async def test_a_broken_state_never_raises(mem: AsyncMemory, tmp_path: Path) -> None:
    state = SQLiteMaintenanceState(tmp_path / "s.db")
    await state.close()
    report = await MaintenanceScheduler(mem, state, now=Clock()).tick()
    assert not report.ran and report.errors[0].startswith("lease:")
    assert "skipped" in report.summary()


async def test_consolidate_on_ignores_what_it_cannot_use() -> None:
    assert await consolidate_on(object(), "after_session", agent_id=AGENT) is None
    assert await consolidate_on(object(), "not-an-interval", agent_id=AGENT) is None
