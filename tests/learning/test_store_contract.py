"""The learning records behave the same on every store: in process, SQLite file, PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault.learning.factory import open_learning_store
from memvault.learning.models import (
    AgentProfile,
    ApprovalItem,
    ApprovalStatus,
    ProceduralMemoryProposal,
    Seniority,
    Trajectory,
)
from memvault.learning.store import (
    ApprovalQueue,
    LearningStore,
    ProfileRepository,
    SkillUsage,
    TrajectoryLog,
)
from postgres_server import SchemaFactory

from .conftest import pg_url

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PROPOSAL = ProceduralMemoryProposal(
    discovery="d", condition="when x", action="do y", confidence=0.9
)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LearningStore]:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = str(tmp_path / "l.db")
    else:
        schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
        url = pg_url(request.getfixturevalue("postgres_url"), schemas())
    found = open_learning_store(url)
    yield found
    await found.close()


def _item(n: int) -> ApprovalItem:
    return ApprovalItem(
        id=f"item-{n}",
        created_at=T0 + timedelta(minutes=n),
        proposal=PROPOSAL,
        pattern_key=f"error:e{n}",
    )


async def test_approval_queue_lists_newest_first_and_decides_once(store: LearningStore) -> None:
    queue = ApprovalQueue(store)
    for n in range(3):
        await queue.add(_item(n))
    assert [i.id for i in await queue.list()] == ["item-2", "item-1", "item-0"]
    approved = _item(1).model_copy(update={"status": ApprovalStatus.APPROVED, "decided_by": "h"})
    assert await queue.decide(approved) is True
    assert await queue.decide(approved) is False  # already decided: compare-and-set
    pending = await queue.list(status=ApprovalStatus.PENDING)
    assert [i.id for i in pending] == ["item-2", "item-0"]
    assert (await queue.get("item-1")).decided_by == "h"
    assert [i.id for i in await queue.list(limit=1)] == ["item-2"]


async def test_profiles_trajectories_and_usage(store: LearningStore) -> None:
    profiles = ProfileRepository(store)
    await profiles.set(AgentProfile(agent_id="b", role="r", seniority=Seniority.LEAD))
    await profiles.set(AgentProfile(agent_id="a", department="d"))
    await profiles.set(AgentProfile(agent_id="a", department="e"))  # replaced
    assert [(p.agent_id, p.department) for p in await profiles.list()] == [("a", "e"), ("b", None)]
    assert (await profiles.get("b")).seniority is Seniority.LEAD  # type: ignore[union-attr]
    assert await profiles.get("nobody") is None

    log = TrajectoryLog(store)
    for n, agent in enumerate(("a", "b", "a")):
        await log.record(
            Trajectory(
                id=f"t{n}",
                agent_id=agent,
                at=T0 + timedelta(days=n),
                task_type="x",
                success=n == 2,
                lesson=PROPOSAL if n == 0 else None,
            )
        )
    assert [t.id for t in await log.since(T0 + timedelta(days=1))] == ["t2", "t1"]
    assert [t.id for t in await log.since(None, agent_id="a")] == ["t2", "t0"]
    assert (await log.since(None, agent_id="a"))[1].lesson == PROPOSAL

    usage = SkillUsage(store)
    assert await usage.get("s1") == (0, None)
    await usage.record(["s1", "s2", "s1"], T0)
    await usage.record(["s1"], T0 + timedelta(hours=1))
    assert await usage.get("s1") == (2, T0 + timedelta(hours=1))
    assert (await usage.get("s2"))[0] == 1


async def test_sqlite_records_survive_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "l.db")
    first = open_learning_store(path)
    await ApprovalQueue(first).add(_item(7))
    await first.close()
    again = open_learning_store(path)
    try:
        assert (await ApprovalQueue(again).get("item-7")).pattern_key == "error:e7"
    finally:
        await again.close()
