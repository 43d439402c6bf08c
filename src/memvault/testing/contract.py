"""The backend contract: one test suite every memvault backend must pass.

Plugin authors subclass :class:`BackendContract` and provide a ``make_backend`` fixture that
returns a factory ``(embedder) -> unconnected backend``; the suite connects, exercises and
disconnects it. memvault runs it on the in-memory, SQLite and PostgreSQL backends::

    class TestMyBackend(BackendContract):
        @pytest.fixture
        def make_backend(self, tmp_path):
            return lambda embedder: MyBackend(tmp_path / "db", embedder)

The suite needs pytest and pytest-asyncio (``asyncio_mode = "auto"``). The ``embedder`` fixture
defaults to the bundled MiniLM model; override it to test with another.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from memvault.errors import (
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.models import (
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryScope,
    MemoryStoreRequest,
    MetadataFilter,
    parse_filters,
)
from memvault.protocols import (
    Embedder,
    MemoryBackend,
    MemoryCapabilities,
    MemoryStore,
    RowTableStore,
    SharedKnowledgeStore,
    SharedMemoryStore,
)

__all__ = [
    "BackendContract",
    "BackendFactory",
    "MetadataFilterContract",
    "NeighbourContract",
    "SharedKnowledgeContract",
]

BackendFactory = Callable[[Embedder], MemoryStore]

T0 = datetime(2025, 1, 15, 9, 30, 0, 123456, tzinfo=UTC)
DAY = timedelta(days=1)

CORPUS = [
    ("The user prefers Litestar over Flask for new web services.", MemoryCategory.SEMANTIC),
    ("Code reviews need two approvals before merging.", MemoryCategory.PROCEDURAL),
    ("Priya, the QA lead, wants detailed test plans on every PR.", MemoryCategory.SOCIAL),
    ("Deployed v2.1 and rolled back because of a memory leak.", MemoryCategory.EPISODIC),
    ("The project database is PostgreSQL 16 with pgvector.", MemoryCategory.SEMANTIC),
    ("Ticket XK-4471 tracks the flaky login test.", MemoryCategory.EPISODIC),
]


def req(content: str, category: MemoryCategory = MemoryCategory.SEMANTIC, **kw: Any) -> Any:
    """A store request (helper for tests)."""
    return MemoryStoreRequest(content=content, category=category, **kw)


class NeighbourContract:
    """Thread-neighbour lookups (context expansion), part of :class:`BackendContract`."""

    async def test_neighbours_follow_insertion_order_within_a_thread(
        self, backend: MemoryStore
    ) -> None:
        turns = [
            req("Ana: did you finish the garden shed?", MemoryCategory.EPISODIC),
            req("Ben: yes, painted it green on Sunday", MemoryCategory.EPISODIC),
            req("Ana: nice, send me a photo", MemoryCategory.EPISODIC),
            req("Ben: here it is", MemoryCategory.EPISODIC),
        ]
        first = [
            t.model_copy(update={"metadata": MemoryMetadata(extra={"session": 1})}) for t in turns
        ]
        second = [
            t.model_copy(update={"metadata": MemoryMetadata(extra={"session": 2})}) for t in turns
        ]
        ids1 = await backend.store_many("a", first)
        ids2 = await backend.store_many("a", second)
        await backend.store("b", req("garden shed of another agent", MemoryCategory.EPISODIC))
        cands = await backend.search_candidates(
            "a", MemoryQuery(text="garden shed"), pool=10, neighbours=10, hops=2
        )
        # ids1[0] is the lexical hit of session 1: two turns after it, none before.
        before, after = cands.neighbours[ids1[0]]
        assert before == ()
        assert after == (ids1[1], ids1[2])
        # The first turn of session 2 must not reach back into session 1.
        before2, after2 = cands.neighbours[ids2[0]]
        assert before2 == ()
        assert after2 == (ids2[1], ids2[2])
        for nid in (*after, *after2):
            assert cands.entries[nid].agent_id == "a"

    async def test_default_search_lifts_the_answer_after_a_question(
        self, backend: MemoryStore
    ) -> None:
        turns = [
            "Ana: what was the name of the hotel in Lisbon?",
            "Ben: it was the Pestana, right by the river",
            "Ana: did you like the food?",
            "Ben: the custard tarts were amazing",
        ] + [f"Ana: unrelated chat number {i} about work" for i in range(30)]
        await backend.store_many(
            "a",
            [
                req(t, MemoryCategory.EPISODIC).model_copy(
                    update={"metadata": MemoryMetadata(extra={"session": 1 + i // 4})}
                )
                for i, t in enumerate(turns)
            ],
        )
        hits = await backend.retrieve("a", MemoryQuery(text="name of the hotel in Lisbon", limit=3))
        assert "Pestana" in " ".join(h.content for h in hits)


SHARED_FACTS = [
    ("Deploys to production need a green canary for 30 minutes.", MemoryCategory.PROCEDURAL),
    ("The billing service is written in Go and owned by team Atlas.", MemoryCategory.SEMANTIC),
    ("Customer Globex wants every invoice in euros.", MemoryCategory.SOCIAL),
]
UNKNOWN_ID = "01900000-0000-7000-8000-000000000000"


def _shared(backend: MemoryStore) -> SharedMemoryStore:
    """``backend`` as a shared-knowledge store; the test is skipped if it offers none."""
    if not backend.supports_shared_access:
        pytest.skip("the backend does not offer shared knowledge (supports_shared_access)")
    assert isinstance(backend, SharedMemoryStore), (
        "supports_shared_access is True, but the backend does not implement SharedMemoryStore"
    )
    return backend


class SharedKnowledgeContract:
    """Shared knowledge (:class:`~memvault.protocols.SharedKnowledgeStore`), part of
    :class:`BackendContract`: publish/search/retract, append-only rows with an audit trail,
    and no leak between private and shared scopes."""

    async def test_shared_access_flag_matches_the_protocol(self, backend: MemoryStore) -> None:
        # Optional capability (the design documents: not every backend needs it), but the flag
        # must tell the truth: callers check it before they publish.
        if backend.supports_shared_access:
            assert isinstance(backend, SharedKnowledgeStore)
            assert isinstance(backend, SharedMemoryStore)

    async def test_published_knowledge_is_found_by_shared_search(
        self, backend: MemoryStore
    ) -> None:
        store = _shared(backend)
        ids = [await store.publish("author", req(text, cat)) for text, cat in SHARED_FACTS]
        hits = await store.search_shared(MemoryQuery(text="how do we deploy to production?"))
        assert hits
        top = hits[0]
        assert top.id == ids[0]
        assert top.scope is MemoryScope.SHARED
        assert top.agent_id == "author"
        assert (top.content, top.category) == SHARED_FACTS[0]
        assert top.retracted_at is None
        assert top.relevance_score is not None
        newest_first = await store.search_shared(MemoryQuery(limit=10))
        assert [e.id for e in newest_first] == list(reversed(ids))
        published = await store.audit_log(memory_id=ids[0])
        assert [(r.action, r.actor, r.agent_id) for r in published] == [
            ("shared.publish", "author", "author")
        ]
        assert published[0].details["category"] == SHARED_FACTS[0][1].value

    async def test_exclude_agent_leaves_out_one_author(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        alice = await store.publish("alice", req("The staging cluster runs in eu-west-1."))
        bob = await store.publish("bob", req("The staging cluster is rebuilt every Monday."))
        q = MemoryQuery(text="staging cluster", limit=20)
        assert {h.id for h in await store.search_shared(q)} == {alice, bob}
        assert [h.id for h in await store.search_shared(q, exclude_agent="alice")] == [bob]
        listed = await store.search_shared(MemoryQuery(limit=20), exclude_agent="bob")
        assert [e.id for e in listed] == [alice]
        cands = await store.search_shared_candidates(
            q, pool=20, neighbours=5, hops=2, exclude_agent="alice"
        )
        assert set(cands.entries) == {bob}

    async def test_private_and_shared_never_mix(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        mine_a = await store.store("agent-a", req("Secret: the vault code is 4471."))
        mine_b = await store.store("agent-b", req("Secret: the vault code is 9902."))
        public = await store.publish("agent-a", req("Everyone: the vault is in room 12."))
        q = MemoryQuery(text="vault code room", limit=50)
        assert [h.id for h in await store.search_shared(q)] == [public]
        assert [e.id for e in await store.search_shared(MemoryQuery(limit=50))] == [public]
        cands = await store.search_shared_candidates(q, pool=50, neighbours=5, hops=2)
        assert set(cands.entries) == {public}
        for agent, own in (("agent-a", mine_a), ("agent-b", mine_b)):
            # A private search returns the agent's private entries only: not another agent's,
            # and not shared knowledge (the author's own publications included).
            assert [h.id for h in await store.retrieve(agent, q)] == [own]
            cands = await store.search_candidates(agent, q, pool=50, neighbours=5, hops=2)
            assert set(cands.entries) == {own}
            listed = await store.list_entries(agent, MemoryQuery(limit=100))
            assert [e.id for e in listed] == [own]
            assert await store.count(agent) == 1
        assert await store.get("agent-b", mine_a) is None
        assert await store.get("agent-b", public) is None
        authored = await store.get("agent-a", public)
        assert authored is not None
        assert authored.scope is MemoryScope.SHARED

    async def test_include_shared_merges_shared_knowledge(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        own = await store.store("agent-b", req("Agent b noted that the vault code changed."))
        public = await store.publish("agent-a", req("Everyone: the vault is in room 12."))
        await store.store("agent-a", req("Secret: the vault code is 4471."))
        q = MemoryQuery(text="vault", limit=10, include_shared=True)
        hits = await store.retrieve("agent-b", q)
        assert {h.id for h in hits} == {own, public}
        scores = [h.relevance_score or 0.0 for h in hits]
        assert scores == sorted(scores, reverse=True)
        shared_hit = next(h for h in hits if h.id == public)
        assert shared_hit.score is not None
        assert shared_hit.score.boost == 0.0
        assert len(await store.retrieve("agent-b", q.model_copy(update={"limit": 1}))) == 1
        listed = await store.retrieve("agent-b", MemoryQuery(limit=10, include_shared=True))
        assert [e.id for e in listed] == [public, own]
        private_only = await store.retrieve("agent-b", MemoryQuery(text="vault", limit=10))
        assert [h.id for h in private_only] == [own]

    async def test_audit_log_travels_as_a_row_table(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        store = _shared(backend)
        if not isinstance(store, RowTableStore):
            pytest.skip("the backend has no extra tables for `memvault migrate` (RowTableStore)")
        assert "audit" in store.row_tables()
        mid = await store.publish("alice", req("Deploys freeze on Fridays."))
        await store.retract("alice", mid)
        rows = [r async for r in store.export_rows("audit")]
        assert [r["action"] for r in rows] == ["shared.publish", "shared.retract"]
        assert await store.count_rows("audit") == 2
        other = make_backend(embedder)
        await other.connect()
        try:
            assert isinstance(other, RowTableStore)
            assert await other.import_rows("audit", rows) == 2
            assert await other.import_rows("audit", rows) == 0  # idempotent
            assert [r async for r in other.export_rows("audit")] == rows
        finally:
            await other.disconnect()

    async def test_archive_travels_as_a_row_table(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        store = _shared(backend)
        if not isinstance(store, RowTableStore) or "archive" not in store.row_tables():
            pytest.skip("the backend has no archive table for `memvault migrate`")
        archiver: Any = store
        ids = [await store.store("alice", req(f"Old note number {i}.")) for i in range(3)]
        await archiver.archive("alice", ids[:2], reason="evict")
        rows = [r async for r in store.export_rows("archive")]
        assert sorted(r["entry"]["id"] for r in rows) == sorted(ids[:2])
        assert await store.count_rows("archive") == 2
        other = make_backend(embedder)
        await other.connect()
        try:
            assert isinstance(other, RowTableStore)
            assert await other.import_rows("archive", rows) == 2
            assert await other.import_rows("archive", rows) == 0  # idempotent
            moved: Any = other
            back = await moved.restore("alice", ids[0])
            assert back.content == "Old note number 0."
        finally:
            await other.disconnect()

    async def test_retract_by_author_hides_keeps_and_audits(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        keep = await store.publish("alice", req("The on-call rota rotates on Tuesdays."))
        gone = await store.publish("alice", req("The on-call phone number is 555-0100."))
        private = await store.store("alice", req("My own on-call notes."))
        q = MemoryQuery(text="on-call phone number rota", limit=20)
        assert gone in {h.id for h in await store.search_shared(q)}
        assert not await store.retract("bob", gone)  # only the author may retract
        assert not await store.retract("alice", UNKNOWN_ID)
        assert not await store.retract("alice", private)  # not shared knowledge
        assert await store.retract("alice", gone)
        assert not await store.retract("alice", gone)  # already retracted
        assert [h.id for h in await store.search_shared(q)] == [keep]
        everything = await store.search_shared(MemoryQuery(limit=100))
        assert [e.id for e in everything] == [keep]
        for variant in (
            q.model_copy(update={"include_superseded": True}),
            q.model_copy(update={"as_of": datetime.now(UTC) - timedelta(seconds=1)}),
        ):
            assert gone not in {h.id for h in await store.search_shared(variant)}
        cands = await store.search_shared_candidates(q, pool=20, neighbours=5, hops=2)
        assert gone not in cands.entries
        merged = await store.retrieve("carol", q.model_copy(update={"include_shared": True}))
        assert [h.id for h in merged] == [keep]
        kept = await store.get("alice", gone)  # the row stays, marked, for the author
        assert kept is not None
        assert kept.content == "The on-call phone number is 555-0100."
        assert kept.retracted_at is not None
        assert not kept.is_live(datetime.now(UTC))
        trail = await store.audit_log(memory_id=gone)
        assert [(r.action, r.actor, r.agent_id, r.memory_id) for r in trail] == [
            ("shared.publish", "alice", "alice", gone),
            ("shared.retract", "alice", "alice", gone),
        ]
        assert trail[1].at == kept.retracted_at
        shared_trail = [r for r in await store.audit_log() if r.action.startswith("shared.")]
        assert {r.memory_id for r in shared_trail} == {keep, gone}
        private_trail = await store.audit_log(memory_id=private)
        assert [r.action for r in private_trail] == ["memory.store"]

    async def test_shared_knowledge_is_append_only(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        public = await store.publish("alice", req("Shared: builds run on Buildkite."))
        private = await store.store("alice", req("Private: builds are slow."))
        with pytest.raises(MemoryValidationError, match="append-only"):
            await store.delete("alice", public)
        assert not await store.delete("bob", public)
        assert await store.count("alice") == 1
        assert await store.clear("alice") == 1
        assert await store.get("alice", private) is None
        with pytest.raises(MemoryValidationError, match="publish"):
            await store.store("alice", req("sneaky", scope=MemoryScope.SHARED))
        assert [e.id for e in await store.search_shared(MemoryQuery(limit=10))] == [public]
        assert [h.id for h in await store.search_shared(MemoryQuery(text="builds"))] == [public]

    async def test_publish_supersedes_only_own_shared_knowledge(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        old = await store.publish("alice", req("The release train leaves on Thursdays."))
        theirs = await store.publish("bob", req("Bob's notes on the release train."))
        private = await store.store("alice", req("Private notes on the release train."))
        for target in (theirs, private, UNKNOWN_ID):
            with pytest.raises(MemoryNotFoundError):
                await store.publish("alice", req("never stored", supersedes=target))
        with pytest.raises(MemoryNotFoundError):
            await store.store("alice", req("never stored", supersedes=old))
        assert {e.id for e in await store.search_shared(MemoryQuery(limit=10))} == {old, theirs}
        new = await store.publish(
            "alice", req("The release train leaves on Fridays now.", supersedes=old)
        )
        ids = {h.id for h in await store.search_shared(MemoryQuery(text="release train day"))}
        assert new in ids
        assert old not in ids
        replaced = await store.get("alice", old)
        assert replaced is not None
        assert replaced.superseded_by == new
        trail = await store.audit_log(memory_id=new)
        assert trail[0].details["supersedes"] == old

    async def test_concurrent_publish_and_search_see_whole_entries(
        self, backend: MemoryStore
    ) -> None:
        store = _shared(backend)
        meta = MemoryMetadata(tags=("runbook",), extra={"team": "ingest"})
        texts = [f"Runbook step {i}: restart the ingest workers in zone {i}." for i in range(8)]
        q = MemoryQuery(text="restart the ingest workers", tags=("runbook",), limit=20)
        problems: list[str] = []
        published: dict[str, str] = {}

        async def writer(i: int, text: str) -> None:
            published[await store.publish(f"agent-{i % 3}", req(text, metadata=meta))] = text

        async def reader() -> None:
            for _ in range(12):
                for hit in await store.search_shared(q):
                    # Visible means complete: content, tags, metadata and the audit record
                    # were written in the same transaction.
                    if hit.content not in texts or hit.metadata != meta:
                        problems.append(f"partial entry {hit.id}")
                    if not await store.audit_log(memory_id=hit.id):
                        problems.append(f"entry {hit.id} visible before its audit record")
                await asyncio.sleep(0)

        await asyncio.gather(*(writer(i, t) for i, t in enumerate(texts)), reader(), reader())
        assert problems == []
        final = await store.search_shared(q)
        assert {h.id: h.content for h in final} == published

    async def test_export_import_keeps_shared_state(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        store = _shared(backend)
        live = await store.publish("alice", req("Shared: the VPN uses WireGuard."))
        gone = await store.publish("alice", req("Shared: the VPN password rotates monthly."))
        assert await store.retract("alice", gone)
        exported = [e async for e in backend.export_entries()]
        target = make_backend(embedder)
        await target.connect()
        try:
            if target.location == backend.location and target.location != "memory://":
                pytest.skip("factory returns the same store; cannot test a second one")
            assert await target.import_entries(exported) == 2
            copy = _shared(target)
            assert [h.id for h in await copy.search_shared(MemoryQuery(text="VPN"))] == [live]
            kept = await copy.get("alice", gone)
            original = await store.get("alice", gone)
            assert kept is not None and original is not None
            assert kept.to_json() == original.to_json()
            assert await copy.count("alice") == 0
        finally:
            await target.disconnect()

    async def test_delete_and_clear_are_audited_once_by_the_store(
        self, backend: MemoryStore
    ) -> None:
        # The store writes the record with the deletion (one transaction: no unaudited delete
        # after a crash); the caller's own record of it, passed afterwards, is not doubled.
        store: Any = _shared(backend)
        if not getattr(store, "audits_deletions", False):
            pytest.skip("the store does not audit deletions itself (the caller audits them)")
        gone = await store.store("alice", req("The old VPN password hint."))
        kept = await store.store("alice", req("The VPN moved to vpn2."))
        assert await store.delete("alice", gone)
        assert not await store.delete("alice", gone)
        trail = [r for r in await store.audit_log(memory_id=gone) if r.action == "memory.delete"]
        assert [(r.actor, r.agent_id) for r in trail] == [("alice", "alice")]
        await store.record_audit([trail[0].model_copy(update={"id": UNKNOWN_ID})])
        again = await store.audit_log(memory_id=gone)
        assert [r.action for r in again].count("memory.delete") == 1
        episodic = await store.store("alice", req("Met Bob.", MemoryCategory.EPISODIC))
        assert await store.clear("alice", category=MemoryCategory.EPISODIC) == 1
        assert await store.clear("alice", category=MemoryCategory.EPISODIC) == 0
        clears = [r for r in await store.audit_log(limit=1000) if r.action == "memory.clear"]
        assert [(r.agent_id, r.details["count"], r.details["category"]) for r in clears] == [
            ("alice", 1, "episodic")
        ]
        assert await store.get("alice", episodic) is None
        assert await store.get("alice", kept) is not None

    async def test_archive_moves_entries_and_restore_brings_them_back(
        self, backend: MemoryStore
    ) -> None:
        store: Any = _shared(backend)
        if not callable(getattr(store, "archive", None)):
            pytest.skip("the backend has no archive")
        ids = [
            await store.store("alice", req(f"Archived fact {i}.", cat))
            for i, cat in enumerate((MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC))
        ]
        moved = await store.archive("alice", [*ids, UNKNOWN_ID], reason="evict")
        assert set(moved) == set(ids)
        for mid in ids:
            # Exactly one of live / archived.
            assert await store.get("alice", mid) is None
            rows = await store.archived("alice", memory_id=mid)
            assert [r.archive_id for r in rows] == [moved[mid]]
            actions = [r.action for r in await store.audit_log(memory_id=mid)]
            assert actions == ["memory.store", "memory.evict"]
        assert {r.memory_id for r in await store.archived("alice")} == set(ids)
        assert await store.archived("bob") == []
        back = await store.restore("alice", ids[1])
        assert back.id == ids[1] and back.category is MemoryCategory.EPISODIC
        assert await store.archived("alice", memory_id=ids[1]) == []
        assert await store.get("alice", ids[1]) is not None
        with pytest.raises(MemoryNotFoundError):
            await store.restore("alice", ids[1])
        hits = await store.retrieve("alice", MemoryQuery(text="archived fact", limit=5))
        assert [h.id for h in hits] == [ids[1]]

    async def test_a_consolidated_original_keeps_the_id_it_was_merged_into(
        self, backend: MemoryStore
    ) -> None:
        store: Any = _shared(backend)
        if not callable(getattr(store, "archive", None)):
            pytest.skip("the backend has no archive")
        original = await store.store("alice", req("The gateway listens on port 8443."))
        summary = await store.store("alice", req("Consolidated: the gateway port is 8443."))
        before = await store.get("alice", original)
        moved = await store.archive(
            "alice", [original], reason="consolidate", consolidated_into=summary
        )
        assert set(moved) == {original}
        (row,) = await store.archived("alice", memory_id=original)
        assert row.reason == "consolidate" and row.entry.consolidated_into == summary
        assert row.entry.content == before.content and row.entry.id == original
        (record,) = [
            r for r in await store.audit_log(memory_id=original) if r.action == "memory.consolidate"
        ]
        assert record.details["consolidated_into"] == summary
        # Live entries never carry it; a restored original is live again, no longer merged.
        assert (await store.get("alice", summary)).consolidated_into is None
        back = await store.restore("alice", original)
        assert back.consolidated_into is None
        assert (await store.get("alice", original)).consolidated_into is None

    async def test_audit_for_agent_reads_one_agents_trail_in_time_order(
        self, backend: MemoryStore
    ) -> None:
        store: Any = _shared(backend)
        if not callable(getattr(store, "audit_for_agent", None)):
            pytest.skip("the backend cannot read the audit log by agent")
        for i in range(3):
            await store.store("alice", req(f"Alice note {i}."))
        await store.store("bob", req("Bob note."))
        trail = await store.audit_log(limit=1000)
        expected = [r for r in trail if r.agent_id == "alice"]
        assert len(expected) == 3
        assert await store.audit_for_agent("alice", limit=100) == expected
        first = await store.audit_for_agent("alice", limit=2)
        rest = await store.audit_for_agent("alice", after=(first[-1].at, first[-1].id))
        assert first + rest == expected


# -- metadata filters ------------------------------------------------------------------------------


async def _count(backend: MemoryStore, agent: str, **kw: Any) -> int:
    return await backend.count(agent, **kw)


async def _listed(backend: MemoryStore, agent: str, query: MemoryQuery, **kw: Any) -> list[str]:
    """Ids listed (newest first) for ``query`` and the extra keywords (e.g. ``filters``)."""
    return [e.id for e in await backend.list_entries(agent, query, **kw)]


def _meta(**extra: Any) -> MemoryMetadata:
    return MemoryMetadata(extra=extra)


# Values stored under the key "k" by _store_values, by name; "missing" has no "k" at all.
FILTER_VALUES: dict[str, Any] = {
    "int1": 1,
    "float1": 1.0,
    "str1": "1",
    "true": True,
    "false": False,
    "null": None,
    "list": [1],
    "object": {"v": 1},
    "int2": 2,
    "float2.5": 2.5,
    "int10": 10,
    "str-a": "a",
    "str-b": "b",
    "str-10": "10",
}


class MetadataFilterContract:
    """Metadata filters (:class:`~memvault.models.MetadataFilter`), part of
    :class:`BackendContract`: every operator with the reference semantics of
    ``MemoryQuery.matches`` (type-sensitive, missing keys, dates, AND), on search, listing and
    counting, and a selective filter that keeps its recall."""

    async def _store_values(self, backend: MemoryStore, agent: str = "a") -> dict[str, str]:
        names = [*FILTER_VALUES, "missing"]
        requests = [
            req(
                f"filter probe {name}",
                metadata=_meta(name=name)
                if name == "missing"
                else _meta(name=name, k=FILTER_VALUES[name]),
                created_at=T0 + timedelta(minutes=i),
            )
            for i, name in enumerate(names)
        ]
        ids = await backend.store_many(agent, requests)
        return dict(zip(names, ids, strict=True))

    async def _names(
        self, backend: MemoryStore, ids: dict[str, str], spec: dict[str, Any], agent: str = "a"
    ) -> set[str]:
        by_id = {v: k for k, v in ids.items()}
        listed = await _listed(backend, agent, MemoryQuery(limit=100, filters=spec))
        counted = await _count(backend, agent, filters=parse_filters(spec))
        assert counted == len(listed), f"count and list disagree for {spec}"
        return {by_id[i] for i in listed}

    async def test_eq_is_exact_and_type_sensitive(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        assert await self._names(backend, ids, {"k": 1}) == {"int1", "float1"}
        assert await self._names(backend, ids, {"k": 1.0}) == {"int1", "float1"}
        assert await self._names(backend, ids, {"k": "1"}) == {"str1"}
        assert await self._names(backend, ids, {"k": True}) == {"true"}
        assert await self._names(backend, ids, {"k": {"eq": False}}) == {"false"}
        assert await self._names(backend, ids, {"k": None}) == {"null"}
        assert await self._names(backend, ids, {"k": "a"}) == {"str-a"}
        assert await self._names(backend, ids, {"k": "[1]"}) == set()  # a list equals nothing
        assert await self._names(backend, ids, {"nope": 1}) == set()

    async def test_ne_and_nin_match_entries_without_the_key(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        everything = set(ids)
        assert await self._names(backend, ids, {"k": {"ne": 1}}) == everything - {
            "int1",
            "float1",
        }
        assert await self._names(backend, ids, {"k": {"ne": None}}) == everything - {"null"}
        assert await self._names(backend, ids, {"k": {"nin": ["1", True, None]}}) == (
            everything - {"str1", "true", "null"}
        )
        assert await self._names(backend, ids, {"k": {"nin": []}}) == everything
        assert "missing" in await self._names(backend, ids, {"nope": {"ne": "x"}})

    async def test_in_compares_each_value_exactly(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        got = await self._names(backend, ids, {"k": {"in": [1, "b", None, False]}})
        assert got == {"int1", "float1", "str-b", "null", "false"}
        assert await self._names(backend, ids, {"k": {"in": ["2", 2.5]}}) == {"float2.5"}
        assert await self._names(backend, ids, {"k": {"in": []}}) == set()

    async def test_ranges_compare_numbers_with_numbers_and_strings_with_strings(
        self, backend: MemoryStore
    ) -> None:
        ids = await self._store_values(backend)
        assert await self._names(backend, ids, {"k": {"gt": 1}}) == {"int2", "float2.5", "int10"}
        assert await self._names(backend, ids, {"k": {"gte": 1}}) == {
            "int1",
            "float1",
            "int2",
            "float2.5",
            "int10",
        }
        assert await self._names(backend, ids, {"k": {"lt": 2}}) == {"int1", "float1"}
        assert await self._names(backend, ids, {"k": {"lte": 2.5, "gt": 1.5}}) == {
            "int2",
            "float2.5",
        }
        # Strings compare as strings (code point order): "10" < "2" < "a" < "b".
        assert await self._names(backend, ids, {"k": {"lt": "2"}}) == {"str1", "str-10"}
        assert await self._names(backend, ids, {"k": {"gte": "a"}}) == {"str-a", "str-b"}
        # Booleans, null, lists and objects are neither numbers nor strings.
        assert await self._names(backend, ids, {"k": {"gte": -1_000_000}}) == {
            "int1",
            "float1",
            "int2",
            "float2.5",
            "int10",
        }

    async def test_exists(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        assert await self._names(backend, ids, {"k": {"exists": True}}) == set(ids) - {"missing"}
        assert await self._names(backend, ids, {"k": {"exists": False}}) == {"missing"}

    async def test_filters_and_together(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        got = await self._names(backend, ids, {"k": {"gt": 1, "lt": 10}, "name": {"ne": "int2"}})
        assert got == {"float2.5"}
        both = [
            MetadataFilter(key="k", op="gte", value=1),
            MetadataFilter(key="name", op="in", value=["int1", "str1", "int10"]),
        ]
        listed = await _listed(backend, "a", MemoryQuery(limit=100, filters=both))
        assert set(listed) == {ids["int1"], ids["int10"]}

    async def test_or_and_not_combine_conditions(self, backend: MemoryStore) -> None:
        ids = await self._store_values(backend)
        everything = set(ids)
        either = {"OR": [{"k": "a"}, {"k": {"gte": 10}}]}
        assert await self._names(backend, ids, either) == {"str-a", "int10"}
        # NOT of a list excludes what matches any item; a missing key matches no item.
        not_numbers = {"NOT": [{"k": {"gte": -1_000_000}}, {"k": None}]}
        assert await self._names(backend, ids, not_numbers) == everything - {
            "int1", "float1", "int2", "float2.5", "int10", "null",
        }  # fmt: skip
        # NOT of a condition on an absent key keeps the entry without the key.
        assert "missing" in await self._names(backend, ids, {"$not": {"k": 1}})
        nested = {
            "$and": [
                {"OR": [{"name": {"in": ["int1", "int2", "str1"]}}, {"k": True}]},
                {"NOT": {"k": {"in": ["1", 2]}}},
            ]
        }
        assert await self._names(backend, ids, nested) == {"int1", "true"}
        # Combined with a plain key (they AND together).
        mixed = {"OR": [{"k": 1}, {"k": "1"}], "name": {"ne": "float1"}}
        assert await self._names(backend, ids, mixed) == {"int1", "str1"}

    async def test_keys_are_top_level_and_may_hold_any_character(
        self, backend: MemoryStore
    ) -> None:
        odd = ["a.b", 'quote"d', "back\\slash", "café", "with space", "$.x"]
        flat = await backend.store("a", req("flat keys", metadata=_meta(**dict.fromkeys(odd, 7))))
        await backend.store("a", req("nested key", metadata=_meta(a={"b": 7})))
        for key in odd:
            q = MemoryQuery(limit=10, filters={key: 7})
            assert await _listed(backend, "a", q) == [flat], key
            q = MemoryQuery(limit=10, filters={key: {"gte": 7}})
            assert await _listed(backend, "a", q) == [flat], key

    async def test_dates_are_canonical_utc_strings_and_compare_in_order(
        self, backend: MemoryStore
    ) -> None:
        berlin = timezone(timedelta(hours=2))
        early = await backend.store(
            "a", req("early", metadata=_meta(due=datetime(2026, 3, 1, 11, 30, tzinfo=berlin)))
        )
        late = await backend.store(
            "a", req("late", metadata=_meta(due=datetime(2026, 3, 1, 9, 30, 0, 250000, tzinfo=UTC)))
        )
        day = await backend.store("a", req("a day", metadata=_meta(due=date(2026, 3, 2))))
        got = await backend.get("a", early)
        assert got is not None
        assert got.metadata.extra["due"] == "2026-03-01T09:30:00+00:00"
        later = await backend.get("a", late)
        assert later is not None
        assert later.metadata.extra["due"] == "2026-03-01T09:30:00.250000+00:00"
        got_day = await backend.get("a", day)
        assert got_day is not None and got_day.metadata.extra["due"] == "2026-03-02T00:00:00+00:00"
        cut = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
        q = MemoryQuery(limit=10, filters={"due": {"lte": cut}})
        assert await _listed(backend, "a", q) == [early]
        q = MemoryQuery(limit=10, filters={"due": {"gt": cut, "lt": date(2026, 3, 2)}})
        assert await _listed(backend, "a", q) == [late]
        q = MemoryQuery(limit=10, filters={"due": {"gte": date(2026, 3, 2)}})
        assert await _listed(backend, "a", q) == [day]
        q = MemoryQuery(limit=10, filters={"due": datetime(2026, 3, 1, 11, 30, tzinfo=berlin)})
        assert await _listed(backend, "a", q) == [early]

    async def test_filters_on_search_list_and_count(self, backend: MemoryStore) -> None:
        kinds = [
            (MemoryCategory.SEMANTIC, "alice", "proj-x"),
            (MemoryCategory.WORKING, "alice", "proj-x"),
            (MemoryCategory.EPISODIC, "alice", "proj-y"),
            (MemoryCategory.SEMANTIC, "bob", "proj-x"),
        ]
        ids = await backend.store_many(
            "a",
            [
                req(
                    f"release checklist {i} for the payments service",
                    cat,
                    metadata=_meta(user_id=user, project=project),
                    created_at=T0 + timedelta(hours=i),
                )
                for i, (cat, user, project) in enumerate(kinds)
            ],
        )
        await backend.store("b", req("release checklist", metadata=_meta(user_id="alice")))
        wanted = {ids[0], ids[1]}
        spec = {"user_id": "alice", "project": "proj-x"}
        q = MemoryQuery(text="release checklist payments", limit=10, filters=spec)
        assert {h.id for h in await backend.retrieve("a", q)} == wanted
        cands = await backend.search_candidates("a", q, pool=10, neighbours=3)
        assert set(cands.entries) == wanted
        assert await _listed(backend, "a", MemoryQuery(limit=10, filters=spec)) == [
            ids[1],
            ids[0],
        ]
        # The keyword adds to the query's own filters.
        alice = MemoryQuery(limit=10, filters={"user_id": "alice"})
        by_kw = await _listed(backend, "a", alice, filters=parse_filters({"project": "proj-y"}))
        assert by_kw == [ids[2]]
        assert await _listed(backend, "a", MemoryQuery(limit=10), filters=()) == list(reversed(ids))
        assert await _count(backend, "a", filters=parse_filters({"user_id": "alice"})) == 3
        assert await _count(backend, "a", filters=parse_filters(spec)) == 2
        assert (
            await _count(
                backend,
                "a",
                category=MemoryCategory.SEMANTIC,
                filters=parse_filters({"user_id": "alice"}),
            )
            == 1
        )
        assert await _count(backend, "a") == 4
        assert await _count(backend, "b", filters=parse_filters({"user_id": "alice"})) == 1

    async def test_a_selective_filter_keeps_its_recall(self, backend: MemoryStore) -> None:
        # 240 close matches of the query and 3 weak ones: the filter must pick the 3 from all
        # rows, not from the top of an unfiltered candidate list.
        crowd = [
            req(
                f"The deploy pipeline failed at build step {i} after the database migration",
                metadata=_meta(user_id="crowd", n=i),
            )
            for i in range(240)
        ]
        needles = [
            req(f"A short note {i} mentioning the pipeline", metadata=_meta(user_id="needle"))
            for i in range(3)
        ]
        ids = await backend.store_many(
            "a", [*needles[:1], *crowd[:120], *needles[1:], *crowd[120:]]
        )
        needle_ids = {ids[0], ids[121], ids[122]}
        q = MemoryQuery(text="deploy pipeline failed at build step", limit=10)
        unfiltered = await backend.search_candidates("a", q, pool=20)
        assert not needle_ids & {i for i, _ in unfiltered.dense}  # the crowd wins without it
        filtered = q.model_copy(update={"filters": parse_filters({"user_id": "needle"})})
        cands = await backend.search_candidates("a", filtered, pool=20)
        assert {i for i, _ in cands.dense} == needle_ids
        assert {i for i, _ in cands.lexical} == needle_ids
        assert {h.id for h in await backend.retrieve("a", filtered)} == needle_ids
        few = q.model_copy(update={"filters": parse_filters({"n": {"in": [5, 200]}})})
        assert len(await backend.retrieve("a", few)) == 2

    async def test_filters_apply_to_shared_knowledge(self, backend: MemoryStore) -> None:
        store = _shared(backend)
        ours = await store.publish(
            "alice", req("Runbook: rotate the API keys", metadata=_meta(team="ops"))
        )
        await store.publish(
            "bob", req("Runbook: rotate the TLS certificates", metadata=_meta(team="web"))
        )
        q = MemoryQuery(text="runbook rotate", limit=10, filters={"team": "ops"})
        assert [h.id for h in await store.search_shared(q)] == [ours]
        listed = await store.search_shared(MemoryQuery(limit=10, filters={"team": {"ne": "web"}}))
        assert [e.id for e in listed] == [ours]

    async def test_metadata_that_is_not_json_is_refused(self, backend: MemoryStore) -> None:
        with pytest.raises(ValueError, match="'when'"):
            req("naive", metadata=_meta(when=datetime(2026, 1, 1)))
        with pytest.raises(ValueError, match="'tags'"):
            req("a set", metadata=_meta(tags={"a", "b"}))
        # Entries that skipped validation (e.g. rows of an old store) are checked on the way in.
        mid = await backend.store("a", req("template"))
        entry = await backend.get("a", mid)
        assert entry is not None
        bad = entry.model_copy(
            update={
                "id": "01900000-0000-7000-8000-0000000000ff",
                "metadata": MemoryMetadata.model_construct(extra={"score": float("nan")}),
            }
        )
        with pytest.raises(MemoryValidationError, match="'score'"):
            await backend.import_entries([bad])
        assert await backend.count("a") == 1


class BackendContract(NeighbourContract, SharedKnowledgeContract, MetadataFilterContract):
    """Behaviour every backend must show. Subclass and provide ``make_backend``."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The embedder the suite indexes with (the bundled MiniLM model by default)."""
        from memvault.embeddings import default_embedder

        return default_embedder()

    @pytest.fixture
    async def backend(
        self, make_backend: BackendFactory, embedder: Embedder
    ) -> AsyncIterator[MemoryStore]:
        """A connected backend, disconnected after the test."""
        b = make_backend(embedder)
        await b.connect()
        try:
            yield b
        finally:
            await b.disconnect()

    async def _seed(self, backend: MemoryStore, agent: str = "agent-a") -> list[str]:
        return await backend.store_many(
            agent,
            [
                req(text, cat, created_at=T0 + timedelta(hours=i))
                for i, (text, cat) in enumerate(CORPUS)
            ],
        )

    # -- protocol conformance ---------------------------------------------------------------

    async def test_satisfies_protocols(self, backend: MemoryStore) -> None:
        assert isinstance(backend, MemoryBackend)
        assert isinstance(backend, MemoryCapabilities)
        assert isinstance(backend, MemoryStore)
        assert backend.is_connected
        assert backend.backend_name
        assert await backend.health_check()
        assert MemoryCategory.EPISODIC in backend.supported_categories

    async def test_unconnected_backend_refuses_work(
        self, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        b = make_backend(embedder)
        assert not b.is_connected
        with pytest.raises(MemoryConnectionError):
            await b.store("a", req("hello"))

    # -- store / get ------------------------------------------------------------------------

    async def test_store_then_get_round_trips_every_field(self, backend: MemoryStore) -> None:
        meta = MemoryMetadata(
            tags=("non-inferable", "decision"),
            label="preferences",
            source="chat",
            confidence=0.8,
            importance=0.9,
            extra={"task": "T-12", "n": 3, "nested": {"ok": True}},
        )
        expires = T0 + timedelta(days=3650)
        mid = await backend.store(
            "agent-a",
            req("Prefers dark mode", metadata=meta, created_at=T0, expires_at=expires),
        )
        got = await backend.get("agent-a", mid)
        assert got is not None
        assert got.id == mid
        assert got.agent_id == "agent-a"
        assert got.content == "Prefers dark mode"
        assert got.category is MemoryCategory.SEMANTIC
        assert got.metadata == meta
        assert got.created_at == T0
        assert got.expires_at == expires
        assert got.superseded_by is None
        assert got.access_count == 0

    async def test_ids_are_unique_and_sortable_in_insertion_order(
        self, backend: MemoryStore
    ) -> None:
        ids = [await backend.store("a", req(f"note number {i}")) for i in range(5)]
        assert len(set(ids)) == 5
        assert ids == sorted(ids)

    async def test_store_many_keeps_input_order(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend)
        assert len(ids) == len(CORPUS)
        for mid, (text, cat) in zip(ids, CORPUS, strict=True):
            got = await backend.get("agent-a", mid)
            assert got is not None
            assert (got.content, got.category) == (text, cat)

    async def test_store_many_with_an_invalid_item_stores_nothing(
        self, backend: MemoryStore
    ) -> None:
        with pytest.raises(MemoryValidationError):
            await backend.store_many(
                "a", [req("fine"), req("expires before it starts", created_at=T0, expires_at=T0)]
            )
        with pytest.raises(MemoryValidationError):
            await backend.store_many("a", [req("fine"), req("y" * 32_001)])
        assert await backend.count("a") == 0

    async def test_get_unknown_id_is_none(self, backend: MemoryStore) -> None:
        assert await backend.get("a", "01900000-0000-7000-8000-000000000000") is None

    async def test_malformed_ids_and_agents_are_rejected(self, backend: MemoryStore) -> None:
        with pytest.raises(MemoryValidationError):
            await backend.get("a", "not an id; drop table")
        with pytest.raises(MemoryValidationError):
            await backend.store("   ", req("hello"))
        with pytest.raises(MemoryValidationError):
            await backend.delete("a", "")

    async def test_content_over_the_configured_maximum_is_rejected(
        self, backend: MemoryStore
    ) -> None:
        with pytest.raises(MemoryValidationError, match="maximum"):
            await backend.store("a", req("x" * 32_001))
        assert await backend.count("a") == 0

    # -- isolation --------------------------------------------------------------------------

    async def test_agents_never_see_each_others_memories(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend, "agent-a")
        await backend.store("agent-b", req("agent b likes tea"))
        assert await backend.count("agent-b") == 1
        for mid in ids:
            assert await backend.get("agent-b", mid) is None
            assert not await backend.delete("agent-b", mid)
        hits = await backend.retrieve("agent-b", MemoryQuery(text="web framework Flask", limit=50))
        assert all(h.agent_id == "agent-b" for h in hits)
        listed = await backend.list_entries("agent-b", MemoryQuery(limit=100))
        assert {e.agent_id for e in listed} == {"agent-b"}
        assert await backend.count("agent-a") == len(CORPUS)

    # -- retrieval --------------------------------------------------------------------------

    async def test_retrieve_ranks_the_relevant_memory_first(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        hits = await backend.retrieve("agent-a", MemoryQuery(text="which web framework?"))
        assert hits
        assert "Litestar" in hits[0].content
        assert hits[0].relevance_score is not None
        scores = [h.relevance_score or 0.0 for h in hits]
        assert scores == sorted(scores, reverse=True)

    async def test_exact_rare_token_is_found_lexically(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        cands = await backend.search_candidates("agent-a", MemoryQuery(text="XK-4471"), pool=10)
        assert cands.lexical
        top = cands.entries[cands.lexical[0][0]]
        assert "XK-4471" in top.content

    async def test_candidates_count_the_rows_the_query_was_compared_with(
        self, backend: MemoryStore
    ) -> None:
        # The off-topic gate allows for the store's size: only the agent's own rows count.
        await self._seed(backend)
        await backend.store_many("agent-b", [req("Gardening notes: tomatoes need sun.")])
        q = MemoryQuery(text="which web framework?")
        assert (await backend.search_candidates("agent-a", q, pool=5)).searched == len(CORPUS)
        assert (await backend.search_candidates("agent-b", q, pool=5)).searched == 1
        social = MemoryQuery(
            text="who is the QA lead?", categories=frozenset({MemoryCategory.SOCIAL})
        )
        filtered = (await backend.search_candidates("agent-a", social, pool=5)).searched
        n_social = sum(c is MemoryCategory.SOCIAL for _, c in CORPUS)
        # A backend may count the rows before the filters (PostgreSQL: a count would cost a scan).
        assert filtered is not None and n_social <= filtered <= len(CORPUS)
        lexical = await backend.search_candidates("agent-a", q, pool=5, dense=False)
        assert lexical.searched is None

    async def test_retrieve_respects_limit(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        hits = await backend.retrieve("agent-a", MemoryQuery(text="project", limit=2))
        assert len(hits) <= 2

    async def test_category_filter(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        q = MemoryQuery(text="memory leak deploy", categories=frozenset({MemoryCategory.SOCIAL}))
        hits = await backend.retrieve("agent-a", q)
        assert hits
        assert {h.category for h in hits} == {MemoryCategory.SOCIAL}

    async def test_tag_and_label_filters(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        tagged = await backend.store(
            "agent-a",
            req(
                "We chose JWT over sessions",
                metadata=MemoryMetadata(tags=("decision",), label="auth"),
            ),
        )
        hits = await backend.retrieve("agent-a", MemoryQuery(text="database", tags=("decision",)))
        assert [h.id for h in hits] == [tagged]
        listed = await backend.list_entries("agent-a", MemoryQuery(label="auth"))
        assert [e.id for e in listed] == [tagged]

    async def test_time_window_filter(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend)
        q = MemoryQuery(
            text="anything at all",
            since=T0 + timedelta(hours=2),
            until=T0 + timedelta(hours=3),
            limit=50,
        )
        hits = await backend.retrieve("agent-a", q)
        assert {h.id for h in hits} <= {ids[2], ids[3]}
        listed = await backend.list_entries("agent-a", q.model_copy(update={"text": None}))
        assert {e.id for e in listed} == {ids[2], ids[3]}

    async def test_expired_entries_are_hidden(self, backend: MemoryStore) -> None:
        await backend.store(
            "a", req("temporary token abc", created_at=T0, expires_at=T0 + timedelta(hours=1))
        )
        live = await backend.store("a", req("permanent token abc"))
        hits = await backend.retrieve("a", MemoryQuery(text="token abc"))
        assert [h.id for h in hits] == [live]
        assert [e.id for e in await backend.list_entries("a", MemoryQuery())] == [live]

    async def test_superseded_entry_hidden_unless_as_of(self, backend: MemoryStore) -> None:
        old = await backend.store("a", req("Prefers dark mode", created_at=T0))
        new = await backend.store(
            "a", req("Now prefers light mode", created_at=T0 + timedelta(days=30), supersedes=old)
        )
        old_entry = await backend.get("a", old)
        assert old_entry is not None
        assert old_entry.superseded_by == new
        assert old_entry.valid_to == T0 + timedelta(days=30)
        hits = await backend.retrieve("a", MemoryQuery(text="display mode preference"))
        assert [h.id for h in hits] == [new]
        both = await backend.retrieve(
            "a", MemoryQuery(text="display mode preference", include_superseded=True)
        )
        assert {h.id for h in both} == {old, new}
        then = await backend.retrieve(
            "a", MemoryQuery(text="display mode preference", as_of=T0 + timedelta(days=1))
        )
        assert [h.id for h in then] == [old]

    async def test_superseding_an_unknown_id_stores_nothing(self, backend: MemoryStore) -> None:
        with pytest.raises(MemoryNotFoundError):
            await backend.store("a", req("new", supersedes="01900000-0000-7000-8000-000000000000"))
        assert await backend.count("a") == 0

    async def test_cannot_supersede_another_agents_memory(self, backend: MemoryStore) -> None:
        theirs = await backend.store("b", req("b's fact"))
        with pytest.raises(MemoryNotFoundError):
            await backend.store("a", req("mine", supersedes=theirs))
        got = await backend.get("b", theirs)
        assert got is not None and got.superseded_by is None

    # -- delete / clear / list / count ------------------------------------------------------

    async def test_delete_removes_from_get_count_and_search(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend)
        assert await backend.delete("agent-a", ids[0])
        assert not await backend.delete("agent-a", ids[0])
        assert await backend.get("agent-a", ids[0]) is None
        assert await backend.count("agent-a") == len(CORPUS) - 1
        hits = await backend.retrieve("agent-a", MemoryQuery(text="Litestar Flask web", limit=50))
        assert ids[0] not in {h.id for h in hits}

    async def test_many_deletes_keep_search_consistent(self, backend: MemoryStore) -> None:
        ids = await backend.store_many(
            "a", [req(f"fact number {i} about apples") for i in range(40)]
        )
        for mid in ids[:30]:
            assert await backend.delete("a", mid)
        hits = await backend.retrieve("a", MemoryQuery(text="apples", limit=100))
        assert {h.id for h in hits} == set(ids[30:])

    async def test_clear_by_category(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        episodic = sum(1 for _, c in CORPUS if c is MemoryCategory.EPISODIC)
        removed = await backend.clear("agent-a", category=MemoryCategory.EPISODIC)
        assert removed == episodic
        assert await backend.count("agent-a", category=MemoryCategory.EPISODIC) == 0
        assert await backend.count("agent-a") == len(CORPUS) - episodic
        assert await backend.clear("agent-a") == len(CORPUS) - episodic
        assert await backend.count("agent-a") == 0
        assert not await backend.retrieve("agent-a", MemoryQuery(text="Litestar"))

    async def test_list_is_newest_first_with_offset(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend)
        listed = await backend.list_entries("agent-a", MemoryQuery(limit=3))
        assert [e.id for e in listed] == list(reversed(ids))[:3]
        rest = await backend.list_entries("agent-a", MemoryQuery(limit=10), offset=3)
        assert [e.id for e in rest] == list(reversed(ids))[3:]

    async def test_count_by_category(self, backend: MemoryStore) -> None:
        await self._seed(backend)
        assert await backend.count("agent-a", category=MemoryCategory.SEMANTIC) == 2
        assert await backend.count("nobody") == 0

    async def test_retrieve_without_text_lists_newest(self, backend: MemoryStore) -> None:
        ids = await self._seed(backend)
        hits = await backend.retrieve("agent-a", MemoryQuery(limit=2))
        assert [h.id for h in hits] == [ids[-1], ids[-2]]

    # -- bulk -------------------------------------------------------------------------------

    async def test_export_import_round_trip_is_lossless(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        await self._seed(backend, "agent-a")
        await backend.store(
            "agent-b",
            req(
                "b's note",
                metadata=MemoryMetadata(tags=("t1",), extra={"k": [1, 2]}),
                created_at=T0,
            ),
        )
        exported = [e async for e in backend.export_entries()]
        assert len(exported) == len(CORPUS) + 1
        assert [e.created_at for e in exported] == sorted(e.created_at for e in exported)
        target = make_backend(embedder)
        await target.connect()
        try:
            if target.location == backend.location and target.location != "memory://":
                pytest.skip("factory returns the same store; cannot test a second one")
            assert await target.import_entries(exported) == len(exported)
            again = [e async for e in target.export_entries()]
            assert [e.to_json() for e in again] == [e.to_json() for e in exported]
            assert await target.import_entries(exported) == 0
            hits = await target.retrieve("agent-a", MemoryQuery(text="which web framework?"))
            assert "Litestar" in hits[0].content
        finally:
            await target.disconnect()

    async def test_export_of_one_agent(self, backend: MemoryStore) -> None:
        await self._seed(backend, "agent-a")
        await backend.store("agent-b", req("other"))
        only_b = [e async for e in backend.export_entries("agent-b")]
        assert [e.content for e in only_b] == ["other"]

    async def test_record_access_counts(self, backend: MemoryStore) -> None:
        mid = await backend.store("a", req("counted"))
        when = datetime.now(UTC)
        await backend.record_access("a", [mid], when)
        await backend.record_access("a", [mid], when)
        await backend.record_access("b", [mid], when)  # another agent: no effect
        got = await backend.get("a", mid)
        assert got is not None
        assert got.access_count == 2
        assert got.last_accessed_at == when
        await backend.record_access("a", [mid], when, times=3)
        again = await backend.get("a", mid)
        assert again is not None and again.access_count == 5
        with pytest.raises(MemoryValidationError):
            await backend.record_access("a", [mid], when, times=0)

    async def test_stats_and_agent_ids(self, backend: MemoryStore) -> None:
        await self._seed(backend, "agent-a")
        await backend.store("agent-b", req("x"))
        stats = await backend.stats()
        assert stats.total == len(CORPUS) + 1
        assert stats.agents == 2
        assert stats.by_category["semantic"] == 3
        assert await backend.agent_ids() == ["agent-a", "agent-b"]

    async def test_concurrent_writes_all_land(self, backend: MemoryStore) -> None:
        results = await asyncio.gather(
            *(backend.store("a", req(f"parallel note {i}")) for i in range(20))
        )
        assert len(set(results)) == 20
        assert await backend.count("a") == 20

    async def test_entries_returned_are_frozen(self, backend: MemoryStore) -> None:
        mid = await backend.store("a", req("immutable"))
        got = await backend.get("a", mid)
        assert isinstance(got, MemoryEntry)
        with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError
            got.content = "changed"  # type: ignore[misc]

    # -- bulk transfer (memvault migrate) ---------------------------------------------------

    async def _second_store(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> MemoryStore:
        target = make_backend(embedder)
        await target.connect()
        if target.location == backend.location and target.location != "memory://":
            await target.disconnect()
            pytest.skip("factory returns the same store; cannot test a second one")
        return target

    async def test_export_in_storage_order_is_insertion_order(self, backend: MemoryStore) -> None:
        first = await backend.store("a", req("written first, dated last", created_at=T0 + DAY * 2))
        second = await backend.store("a", req("written second, dated first", created_at=T0))
        third = await backend.store("b", req("another agent's note", created_at=T0 + DAY))
        assert [e.id async for e in backend.export_in_storage_order()] == [first, second, third]
        assert [e.id async for e in backend.export_in_storage_order("a")] == [first, second]
        assert [e.id async for e in backend.export_entries()] == [second, third, first]

    async def test_vectors_round_trip_bit_exactly(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        ids = await self._seed(backend, "agent-a")
        other = await backend.store("agent-b", req("b's note", created_at=T0))
        unknown = "01900000-0000-7000-8000-000000000000"
        vectors = await backend.export_vectors([*ids, other, unknown])
        assert set(vectors) == {*ids, other}
        for vec in vectors.values():
            assert vec.dtype == np.float32
            assert vec.shape == (embedder.dimension,)
        # The stored vectors are the content's embeddings (same batch, so the same numbers).
        fresh = embedder.embed_documents([text for text, _ in CORPUS])
        assert np.allclose(np.stack([vectors[i] for i in ids]), fresh, atol=1e-5)
        entries = [e async for e in backend.export_in_storage_order()]
        target = await self._second_store(backend, make_backend, embedder)
        try:
            assert await target.import_with_vectors(entries, vectors) == len(entries)
            copied = await target.export_vectors(list(vectors))
            assert set(copied) == set(vectors)
            for mid, vec in vectors.items():
                assert copied[mid].dtype == np.float32
                assert copied[mid].tobytes() == vec.tobytes()
            theirs = [e.to_json() async for e in target.export_entries()]
            assert theirs == [e.to_json() async for e in backend.export_entries()]
            assert [e.id async for e in target.export_in_storage_order()] == [e.id for e in entries]
            assert await target.import_with_vectors(entries, vectors) == 0
            q = MemoryQuery(text="which web framework?")
            hits = [h.id for h in await target.retrieve("agent-a", q)]
            assert hits == [h.id for h in await backend.retrieve("agent-a", q)]
        finally:
            await target.disconnect()

    async def test_import_with_vectors_validates_everything_first(
        self, backend: MemoryStore, make_backend: BackendFactory, embedder: Embedder
    ) -> None:
        ids = await self._seed(backend)
        entries = [e async for e in backend.export_in_storage_order()]
        vectors = await backend.export_vectors(ids)
        target = await self._second_store(backend, make_backend, embedder)
        try:
            missing = {k: v for k, v in vectors.items() if k != ids[-1]}
            short = {**vectors, ids[-1]: np.zeros(3, dtype=np.float32)}
            nan = vectors[ids[-1]].copy()
            nan[0] = np.nan
            for bad in (missing, short, {**vectors, ids[-1]: nan}):
                with pytest.raises(MemoryValidationError):
                    await target.import_with_vectors(entries, bad)
            assert await target.count("agent-a") == 0
            assert await target.import_with_vectors([], {}) == 0
        finally:
            await target.disconnect()
