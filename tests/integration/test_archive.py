"""The archive: entries moved out of the live store keep everything and come back by id.

Runs on a real SQLite file, a real PostgreSQL schema and the in-memory store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memvault.backends._base import BaseBackend
from memvault.errors import MemoryNotFoundError
from memvault.models import MemoryMetadata, MemoryQuery, MemoryStoreRequest

AGENT = "archivist"


@pytest.fixture
async def store(any_backend: BaseBackend) -> AsyncIterator[BaseBackend]:
    backend = any_backend
    await backend.connect()
    try:
        yield backend
    finally:
        await backend.disconnect()


async def test_archive_and_restore_round_trip(store: BaseBackend) -> None:
    ids = await store.store_many(
        AGENT,
        [
            MemoryStoreRequest(
                content="The staging database lives in eu-west-1.",
                metadata=MemoryMetadata(tags=("infra",)),
            ),
            MemoryStoreRequest(content="Quarterly report is due on the 5th."),
        ],
    )
    before = await store.get(AGENT, ids[0])
    assert before is not None
    index = await store.archive(AGENT, [ids[0], "no-such-id"], reason="evict")
    assert set(index) == {ids[0]}
    assert await store.get(AGENT, ids[0]) is None
    assert await store.count(AGENT) == 1
    hits = await store.retrieve(AGENT, MemoryQuery(text="staging database region"))
    assert ids[0] not in [h.id for h in hits]

    listed = await store.archived(AGENT)
    assert [a.memory_id for a in listed] == [ids[0]]
    assert listed[0].archive_id == index[ids[0]] and listed[0].reason == "evict"
    assert listed[0].entry.content == before.content
    assert listed[0].entry.metadata.tags == ("infra",)
    # Another agent sees nothing of it and cannot restore it.
    assert await store.archived("someone-else") == []
    with pytest.raises(MemoryNotFoundError):
        await store.restore("someone-else", ids[0])

    restored = await store.restore(AGENT, ids[0])
    assert restored.id == ids[0]
    assert restored.content == before.content and restored.created_at == before.created_at
    assert await store.archived(AGENT) == []
    hits = await store.retrieve(AGENT, MemoryQuery(text="staging database region"))
    assert hits and hits[0].id == ids[0]
    with pytest.raises(MemoryNotFoundError):
        await store.restore(AGENT, ids[0])

    actions = [r.action for r in await store.audit_log(memory_id=ids[0])]
    assert actions == ["memory.store", "memory.evict", "memory.restore"]


async def test_restore_after_a_crash_between_insert_and_drop(store: BaseBackend) -> None:
    (mid,) = await store.store_many(AGENT, [MemoryStoreRequest(content="Backups run at 2am.")])
    await store.archive(AGENT, [mid], reason="expire")
    archived = (await store.archived(AGENT))[0]
    # Simulate the crash: the entry went back, the archive row was not dropped yet.
    await store.import_entries([archived.entry])
    restored = await store.restore(AGENT, mid)
    assert restored.id == mid
    assert await store.archived(AGENT) == []
    assert await store.count(AGENT) == 1
