"""Consolidation through ``AsyncMemory`` on real stores: new entries are stored, originals are
archived with an archival index and come back by id, episodes become facts and are marked,
and a failing LLM never costs a memory.

Real SQLite files, a real PostgreSQL schema, the in-memory store, the real embedding model;
the LLM is scripted (a remote model cannot run here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.llm import ScriptedLLM
from memvault.llm.errors import ProviderAuthError
from memvault.protocols import MemoryStore

AGENT = "dev-1"
NOTES = [
    "The API gateway runs on port 8443.",
    "Deploys need two approvals on the release PR.",
    "The on-call rotation changes every Monday at 09:00.",
    "Staging uses the eu-west-1 region.",
]


@pytest.fixture
async def mem(any_backend: MemoryStore) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(backend=any_backend) as memory:
        # Older than consolidation's minimum age (30 days), so they are merged.
        start = datetime.now(UTC) - timedelta(days=60)
        for i, text in enumerate(NOTES):
            await memory.add(text, agent_id=AGENT, created_at=start + timedelta(days=i))
        yield memory


async def test_simple_consolidation_stores_then_archives(mem: AsyncMemory) -> None:
    before = {e.id: e.content for e in await mem.list(agent_id=AGENT, limit=50)}
    dry = await mem.consolidate(agent_id=AGENT, dry_run=True)
    assert dry.dry_run and not dry.created_ids and not dry.removed_ids
    assert await mem.count(agent_id=AGENT) == len(NOTES)

    result = await mem.consolidate(agent_id=AGENT, strategy="simple")
    assert len(result.created_ids) == 1
    assert result.removed_ids and set(result.archival_index) == set(result.removed_ids)
    live = {e.id: e for e in await mem.list(agent_id=AGENT, limit=50)}
    summary = live[result.created_ids[0]]
    for original in result.removed_ids:
        assert original not in live
        assert before[original] in summary.content  # concatenation keeps every word
    archived = {a.memory_id: a for a in await mem.archived(agent_id=AGENT)}
    assert set(archived) == set(result.removed_ids)
    assert {a.reason for a in archived.values()} == {"consolidate"}
    for original, archive_id in result.archival_index.items():
        assert archived[original].archive_id == archive_id
    # Nothing is lost: every original is live or archived, and each comes back by id.
    assert set(before) <= set(live) | set(archived)
    first = result.removed_ids[0]
    assert (await mem.restore(first, agent_id=AGENT)).content == before[first]
    actions = [r.action for r in await mem.audit(agent_id=AGENT, memory_id=first)]
    assert actions == ["memory.store", "memory.consolidate", "memory.restore"]


async def test_llm_synthesis_wraps_entries_as_data(mem: AsyncMemory) -> None:
    llm = ScriptedLLM(["Gateway on 8443; deploys need two approvals; staging in eu-west-1."])
    result = await mem.consolidate(agent_id=AGENT, strategy="llm", llm=llm)
    assert len(result.created_ids) == 1
    created = await mem.get(result.created_ids[0], agent_id=AGENT)
    assert created is not None and created.content.startswith("Gateway on 8443")
    prompt = " ".join(m.content for m in llm.calls[0])
    assert "<entry" in prompt and NOTES[0] in prompt


async def test_non_retryable_llm_failure_deletes_nothing(mem: AsyncMemory) -> None:
    llm = ScriptedLLM([ProviderAuthError("bad key")])
    result = await mem.consolidate(agent_id=AGENT, strategy="llm", llm=llm)
    assert not result.created_ids and not result.removed_ids
    assert await mem.count(agent_id=AGENT) == len(NOTES)
    assert await mem.archived(agent_id=AGENT) == []


async def test_episodes_become_facts_and_are_marked(mem: AsyncMemory) -> None:
    now = datetime.now(UTC)
    episodes = [
        await mem.add(
            text, agent_id=AGENT, category="episodic", created_at=now - timedelta(hours=h)
        )
        for h, text in (
            (5, "Debugged the flaky login test with Sam; root cause was a 30s timeout."),
            (4, "Sam said the team standup moves to 10:30 from next week."),
        )
    ]
    llm = ScriptedLLM(
        [
            "SEMANTIC: The flaky login test was caused by a 30 second timeout.\n"
            "not a fact line\n"
            "SOCIAL: The team standup is at 10:30.\n"
        ]
    )
    result = await mem.consolidate(agent_id=AGENT, strategy="extract", llm=llm)
    assert len(result.created_ids) == 2
    facts = [await mem.get(i, agent_id=AGENT) for i in result.created_ids]
    assert {f.category.value for f in facts if f is not None} == {"semantic", "social"}
    assert set(result.marked_ids) == set(episodes)
    for episode in episodes:
        entry = await mem.get(episode, agent_id=AGENT)
        assert entry is not None and entry.consolidated_at is not None  # kept, marked
    # Marked episodes are not extracted again.
    again = await mem.consolidate(agent_id=AGENT, strategy="extract", llm=ScriptedLLM([]))
    assert not again.created_ids


async def test_unknown_strategy_is_a_validation_error(mem: AsyncMemory) -> None:
    with pytest.raises(MemoryValidationError, match="unknown consolidation strategy"):
        await mem.consolidate(agent_id=AGENT, strategy="magic")


async def test_llm_strategies_without_an_llm_refuse_and_change_nothing(mem: AsyncMemory) -> None:
    for strategy in ("llm", "dual_mode"):
        with pytest.raises(MemoryConfigError, match="needs an LLM"):
            await mem.consolidate(agent_id=AGENT, strategy=strategy)
    assert await mem.count(agent_id=AGENT) == len(NOTES)
    assert await mem.archived(agent_id=AGENT) == []


async def test_llm_synthesis_sees_recent_distillations(mem: AsyncMemory) -> None:
    await mem.add(
        "Task t-7: success. Trajectory: 4 turns, 900 tokens.",
        agent_id=AGENT,
        category="episodic",
        tags=["distillation"],
    )
    llm = ScriptedLLM(["Merged notes."], repeat_last=True)
    result = await mem.consolidate(agent_id=AGENT, strategy="llm", llm=llm)
    assert len(result.created_ids) == 1
    system = llm.calls[0][0]
    assert system.role == "system" and "<distillation>Task t-7: success." in system.content
