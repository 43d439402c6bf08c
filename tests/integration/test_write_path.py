"""The write path end to end through ``AsyncMemory``: near-duplicates become confirmations,
contradicting statements supersede the old value, explicit ``supersedes`` closes the old entry,
and superseded entries stay reachable with ``as_of`` / ``include_superseded``.

Every test runs on a real SQLite file, a real PostgreSQL schema and the in-memory store, with
the real bundled embedding model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryValidationError
from memvault.models import MemoryStoreRequest
from memvault.protocols import MemoryStore
from memvault.write import WriteKind

AGENT = "writer-1"


@pytest.fixture
async def memory(any_backend: MemoryStore) -> AsyncIterator[AsyncMemory]:
    mem = AsyncMemory(backend=any_backend)
    try:
        yield mem
    finally:
        await mem.close()


async def test_near_duplicate_is_a_confirmation(memory: AsyncMemory) -> None:
    first = await memory.add("The user prefers dark mode in the editor.", agent_id=AGENT)
    again = await memory.write("the user prefers dark mode in the editor", agent_id=AGENT)
    assert again.decision.kind is WriteKind.NOOP
    assert again.id == first
    assert await memory.count(agent_id=AGENT) == 1
    entry = await memory.get(first, agent_id=AGENT)
    assert entry is not None and entry.access_count >= 1


async def test_dedup_is_per_agent_and_per_category(memory: AsyncMemory) -> None:
    text = "Deploys go out on Tuesdays after the standup."
    a = await memory.add(text, agent_id=AGENT)
    b = await memory.add(text, agent_id="writer-2")
    c = await memory.add(text, agent_id=AGENT, category="procedural")
    assert len({a, b, c}) == 3
    assert await memory.count(agent_id=AGENT) == 2


async def test_dedup_off_stores_copies(memory: AsyncMemory) -> None:
    text = "The office wifi password rotates monthly."
    a = await memory.add(text, agent_id=AGENT, dedup=False)
    b = await memory.add(text, agent_id=AGENT, dedup=False)
    assert a != b
    assert await memory.count(agent_id=AGENT) == 2


async def test_detected_contradiction_supersedes(memory: AsyncMemory) -> None:
    old = await memory.add("Prefers dark mode in the editor", agent_id=AGENT)
    new = await memory.write("User now prefers light mode in the editor", agent_id=AGENT)
    assert new.decision.kind is WriteKind.SUPERSEDE
    assert new.decision.detected and new.decision.old_id == old
    assert new.id is not None and new.id != old

    closed = await memory.get(old, agent_id=AGENT)
    assert closed is not None
    assert closed.superseded_by == new.id and closed.valid_to is not None

    live = [e.id for e in await memory.search("editor mode preference", agent_id=AGENT)]
    assert live == [new.id]
    everything = await memory.search(
        "editor mode preference", agent_id=AGENT, include_superseded=True
    )
    assert {e.id for e in everything} == {old, new.id}
    before = closed.valid_to - timedelta(microseconds=1)
    then = await memory.search("editor mode preference", agent_id=AGENT, as_of=before)
    assert [e.id for e in then] == [old]


async def test_explicit_supersedes_wins_over_dedup(memory: AsyncMemory) -> None:
    old = await memory.add("Team lunch is on Fridays.", agent_id=AGENT)
    # Identical text would be a NOOP; an explicit correction is always stored.
    new = await memory.add("Team lunch is on Fridays.", agent_id=AGENT, supersedes=old)
    assert new != old
    closed = await memory.get(old, agent_id=AGENT)
    assert closed is not None and closed.superseded_by == new


async def test_batch_stores_one_copy_and_resolves_within_batch(memory: AsyncMemory) -> None:
    ids = await memory.add_many(
        [
            {"content": "Alice's favourite drink is green tea."},
            {"content": "alice's favourite drink is green tea"},
            {"content": "Project Atlas budget is 500 dollars."},
            {"content": "Project Atlas budget is 650 dollars."},
        ],
        agent_id=AGENT,
    )
    assert ids[0] == ids[1]
    assert len(set(ids)) == 3
    budget_old = await memory.get(ids[2], agent_id=AGENT)
    assert budget_old is not None and budget_old.superseded_by == ids[3]
    assert await memory.count(agent_id=AGENT) == 3
    hits = [h.id for h in await memory.search("Atlas budget", agent_id=AGENT)]
    assert hits[0] == ids[3] and ids[2] not in hits


async def test_older_news_is_stored_already_superseded(memory: AsyncMemory) -> None:
    now = datetime.now(UTC)
    newer = await memory.add("Project Atlas budget is 900 dollars.", agent_id=AGENT, created_at=now)
    older = await memory.write(
        "Project Atlas budget is 400 dollars.",
        agent_id=AGENT,
        created_at=now - timedelta(days=30),
    )
    assert older.decision.kind is WriteKind.ADD and older.decision.outdated_by == newer
    assert older.id is not None
    stored = await memory.get(older.id, agent_id=AGENT)
    assert stored is not None and stored.superseded_by == newer
    trail = await memory.audit(agent_id=AGENT, memory_id=older.id)
    assert [r.action for r in trail] == ["memory.store"]
    hits = await memory.search("Atlas budget", agent_id=AGENT)
    assert [h.id for h in hits] == [newer]


async def test_admission_rejects_noise_without_error(memory: AsyncMemory) -> None:
    outcome = await memory.write("ok", agent_id=AGENT, admission=True)
    assert outcome.decision.kind is WriteKind.REJECT
    assert outcome.id is None and outcome.decision.reason
    assert await memory.count(agent_id=AGENT) == 0
    kept = await memory.write(
        "Maria Lopez moved the Q3 launch of Project Atlas to 14 October 2026.",
        agent_id=AGENT,
        admission=True,
    )
    assert kept.decision.kind is WriteKind.ADD and kept.id is not None
    # Off by default for explicit add.
    assert await memory.add("ok", agent_id=AGENT)


async def test_store_many_keeps_given_vectors_and_checks_them(any_backend: MemoryStore) -> None:
    await any_backend.connect()
    try:
        texts = ["Backups run nightly at 02:00.", "The VPN needs a hardware key."]
        given = any_backend.embedder.embed_documents(texts)
        ids = await any_backend.store_many(
            AGENT,
            [MemoryStoreRequest(content=t) for t in texts],
            vectors=list(given),
        )
        stored = await any_backend.export_vectors(ids)
        for i, memory_id in enumerate(ids):
            assert np.array_equal(stored[memory_id], np.asarray(given[i], dtype=np.float32))
        with pytest.raises(MemoryValidationError, match="1 vectors for 2 requests"):
            await any_backend.store_many(
                AGENT, [MemoryStoreRequest(content=t) for t in texts], vectors=[given[0]]
            )
        with pytest.raises(MemoryValidationError, match="expected"):
            await any_backend.store_many(
                AGENT, [MemoryStoreRequest(content="x y z")], vectors=[np.zeros(3)]
            )
        assert await any_backend.count(AGENT) == 2
    finally:
        await any_backend.disconnect()


async def test_writes_that_store_nothing_are_audited(memory: AsyncMemory) -> None:
    """Duplicates and admission rejections leave an audit record (the writes-by-decision
    chart counts them), with the category and the reason but not the content."""
    first = await memory.add("The user prefers dark mode in the editor.", agent_id=AGENT)
    again = await memory.write("the user prefers dark mode in the editor", agent_id=AGENT)
    refused = await memory.write("ok", agent_id=AGENT, admission=True)
    assert again.decision.kind is WriteKind.NOOP
    assert refused.decision.kind is WriteKind.REJECT
    trail = await memory.audit(agent_id=AGENT)
    by_action = {r.action: r for r in trail}
    assert [r.action for r in trail].count("memory.store") == 1
    duplicate = by_action["memory.duplicate"]
    assert duplicate.memory_id == first
    assert duplicate.details["category"] == "semantic"
    reject = by_action["memory.reject"]
    assert reject.memory_id is None
    assert reject.details["reason"] == refused.decision.reason
    assert "admission" in reject.details
    assert all(str(v) != "ok" for r in trail for v in r.details.values())
