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
from datetime import UTC, datetime, timedelta
from typing import Any

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
    MemoryStoreRequest,
)
from memvault.protocols import Embedder, MemoryBackend, MemoryCapabilities, MemoryStore

__all__ = ["BackendContract", "BackendFactory", "NeighbourContract"]

BackendFactory = Callable[[Embedder], MemoryStore]

T0 = datetime(2025, 1, 15, 9, 30, 0, 123456, tzinfo=UTC)

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


class BackendContract(NeighbourContract):
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
