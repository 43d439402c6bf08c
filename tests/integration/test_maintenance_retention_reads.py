"""Read-time retention: a memory past its age rule is never returned, even before a sweep.

Search, list, get and context all leave expired memories out (get answers not-found); pages are
never short of live entries, because the rule is a cutoff inside the backend's query. Every
store kind (real SQLite file, real PostgreSQL schema, in-memory), the real embedding model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memvault import AsyncMemory
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.errors import MemoryNotFoundError
from memvault.protocols import MemoryStore

AGENT = "archivist"
OTHER = "veteran"


def _config(**options: object) -> MemvaultConfig:
    return MemvaultConfig(options=MemoryOptionsConfig.model_validate(options))


@pytest.fixture
async def mem(any_backend: MemoryStore) -> AsyncIterator[AsyncMemory]:
    # Semantic facts live 30 days, episodes forever; one agent keeps its facts 365 days.
    config = _config(
        retention_by_category={"semantic": 30},
        agent_retention={OTHER: {"by_category": {"semantic": 365}}},
    )
    async with AsyncMemory(backend=any_backend, config=config) as memory:
        yield memory


async def _seed(mem: AsyncMemory, agent: str) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "old_fact": await mem.add(
            "The deploy pipeline uses blue-green releases on the staging cluster.",
            agent_id=agent,
            category="semantic",
            created_at=now - timedelta(days=90),
            dedup=False,
        ),
        "new_fact": await mem.add(
            "The deploy pipeline uses canary releases on the production cluster.",
            agent_id=agent,
            category="semantic",
            created_at=now - timedelta(days=2),
            dedup=False,
        ),
        "old_episode": await mem.add(
            "Deployed the pipeline change to staging and rolled back after errors.",
            agent_id=agent,
            category="episodic",
            created_at=now - timedelta(days=400),
            dedup=False,
        ),
    }


async def test_expired_memory_is_never_returned_before_a_sweep(mem: AsyncMemory) -> None:
    ids = await _seed(mem, AGENT)

    found = {e.id for e in await mem.search("deploy pipeline releases", agent_id=AGENT)}
    assert ids["old_fact"] not in found
    assert {ids["new_fact"], ids["old_episode"]} <= found

    listed = [e.id for e in await mem.list(agent_id=AGENT, limit=10)]
    assert listed == [ids["new_fact"], ids["old_episode"]]  # newest first, expired left out

    with pytest.raises(MemoryNotFoundError):
        await mem.get(ids["old_fact"], agent_id=AGENT)
    assert (await mem.get(ids["new_fact"], agent_id=AGENT)).id == ids["new_fact"]

    ctx = await mem.context("deploy pipeline releases", agent_id=AGENT, min_relevance=0.0)
    assert "blue-green" not in ctx.text
    assert "canary" in ctx.text

    # The sweep then moves it to the archive, from where it can still be restored by hand.
    report = await mem.sweep(agent_id=AGENT)
    assert set(report.expired) == {ids["old_fact"]}


async def test_pages_are_not_short_of_live_entries(mem: AsyncMemory) -> None:
    ids = await _seed(mem, AGENT)
    # A limit of 2 still gives two live entries: the expired one never took a slot.
    page = await mem.list(agent_id=AGENT, limit=2)
    assert [e.id for e in page] == [ids["new_fact"], ids["old_episode"]]
    second = await mem.list(agent_id=AGENT, limit=1, offset=1)
    assert [e.id for e in second] == [ids["old_episode"]]
    hits = await mem.search("deploy pipeline", agent_id=AGENT, limit=2)
    assert {e.id for e in hits} == {ids["new_fact"], ids["old_episode"]}


async def test_agent_override_and_category_filter(mem: AsyncMemory) -> None:
    ids = await _seed(mem, OTHER)
    # 365 days for this agent's facts: the 90-day-old one is still live.
    facts = await mem.list(agent_id=OTHER, category="semantic")
    assert {e.id for e in facts} == {ids["old_fact"], ids["new_fact"]}
    assert (await mem.get(ids["old_fact"], agent_id=OTHER)).id == ids["old_fact"]
    # The same data under the company rule, restricted to one category.
    mine = await _seed(mem, AGENT)
    only = await mem.search("deploy pipeline", agent_id=AGENT, categories=["semantic"])
    assert [e.id for e in only] == [mine["new_fact"]]


async def test_retention_days_applies_to_every_category(any_backend: MemoryStore) -> None:
    config = _config(retention_days=30)
    async with AsyncMemory(backend=any_backend, config=config) as mem:
        ids = await _seed(mem, AGENT)
        listed = {e.id for e in await mem.list(agent_id=AGENT)}
        assert listed == {ids["new_fact"]}
        hits = await mem.search("deploy pipeline staging", agent_id=AGENT)
        assert [e.id for e in hits] == [ids["new_fact"]]
