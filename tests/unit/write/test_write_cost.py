"""What one write costs, counted rather than timed: embeddings, searches, statements, commits.

A single ``add`` with dedup on embeds its text once, searches its neighbours once (plus one
lexical search when the text states something a later value could contradict), commits once,
and checks the agent's cap without scanning its rows. The dense product runs on one BLAS thread.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from counting_embedder import CountingEmbedder
from memvault import AsyncMemory
from memvault.backends.factory import keep_working_in_process
from memvault.backends.sqlite import _blas
from memvault.backends.sqlite.backend import SQLiteBackend
from memvault.backends.sqlite.vector_index import AgentIndex
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.errors import MemoryError
from memvault.models import CandidateSet, MemoryCategory
from memvault.protocols import Embedder
from memvault.write import WriteKind

AGENT = "cost"
FILLER = [
    f"Deploy note {i}: the {svc} service moved to cluster {i % 7} after the {day} review."
    for i, (svc, day) in enumerate(
        (s, d)
        for s in ("billing", "search", "ingest", "checkout", "auth")
        for d in ("Monday", "Tuesday", "Friday", "sprint")
    )
]


class ProbedBackend(SQLiteBackend):
    """The SQLite store, counting what a write asks of it (neighbour searches, vector exports,
    audit and access records) and, between :meth:`start` and :meth:`stop`, the SQL statements
    its connection runs (the store's ``trace`` hook)."""

    def __init__(self, path: Path, embedder: Any, **kwargs: Any) -> None:
        super().__init__(path, embedder, trace=self._note, **kwargs)
        self.calls: Counter[str] = Counter()
        self.statements: list[str] = []
        self._recording = False

    async def search_candidates(self, *args: Any, **kwargs: Any) -> CandidateSet:
        self.calls["search_candidates"] += 1
        return await super().search_candidates(*args, **kwargs)

    async def export_vectors(self, *args: Any, **kwargs: Any) -> Any:
        self.calls["export_vectors"] += 1
        return await super().export_vectors(*args, **kwargs)

    async def record_audit(self, *args: Any, **kwargs: Any) -> Any:
        self.calls["record_audit"] += 1
        return await super().record_audit(*args, **kwargs)

    async def record_access(self, *args: Any, **kwargs: Any) -> Any:
        self.calls["record_access"] += 1
        return await super().record_access(*args, **kwargs)

    def start(self) -> None:
        self.calls.clear()
        self.statements.clear()
        self._recording = True

    def stop(self) -> None:
        self._recording = False

    def _note(self, sql: str) -> None:
        if self._recording and not sql.startswith("--"):  # FTS5's own statements, not ours
            self.statements.append(" ".join(sql.split()))

    def sql_count(self, prefix: str) -> int:
        return sum(s.upper().startswith(prefix) for s in self.statements)


def _durable(mem: AsyncMemory) -> SQLiteBackend:
    backend: Any = mem.backend
    durable = getattr(backend, "durable", backend)
    assert isinstance(durable, SQLiteBackend)
    return durable


@pytest.fixture
def counting(minilm: Embedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)


@pytest.fixture
def probe(tmp_path: Path, counting: CountingEmbedder) -> ProbedBackend:
    # The store the default configuration opens: a 10,000-memory cap per agent.
    cap = MemoryOptionsConfig().max_memories_per_agent
    assert cap == 10_000
    return ProbedBackend(tmp_path / "cost.db", counting, max_memories_per_agent=cap)


@pytest.fixture
async def store(probe: ProbedBackend, counting: CountingEmbedder) -> Any:
    # The default configuration otherwise: dedup on, WORKING memories kept in process.
    config = MemvaultConfig()
    backend = keep_working_in_process(probe, config)
    mem = AsyncMemory(backend=backend, config=config, embedder=counting)  # type: ignore[arg-type]
    assert _durable(mem) is probe
    await mem.add_many([{"content": t} for t in FILLER], agent_id=AGENT, dedup=False)
    await mem.search("warm the index", agent_id=AGENT)
    # A read waits for the search's access counts to be written, so that write is not counted.
    assert await mem.count(agent_id=AGENT) == len(FILLER)
    try:
        yield mem
    finally:
        await mem.close()


async def test_single_add_embeds_once_searches_once_and_commits_once(
    store: AsyncMemory, counting: CountingEmbedder, probe: ProbedBackend
) -> None:
    counting.calls.clear()
    probe.start()
    result = await store.write(
        "The search service moved to cluster 9 after the Thursday incident.", agent_id=AGENT
    )
    probe.stop()
    assert result.decision.kind is WriteKind.ADD
    assert counting.calls == Counter({"documents": 1, "texts": 1})
    assert probe.calls == Counter({"search_candidates": 1})
    assert probe.sql_count("BEGIN") == 1
    assert probe.sql_count("COMMIT") == 1
    # Memory row, vector, static vector, FTS row and audit record, in the one transaction.
    inserts = [s.split("(")[0].strip() for s in probe.statements if s.startswith("INSERT")]
    assert inserts == [
        "INSERT INTO memories",
        "INSERT INTO memory_vectors",
        "INSERT INTO memory_static",
        "INSERT INTO memories_fts",
        "INSERT INTO audit",
    ]
    begin = next(i for i, s in enumerate(probe.statements) if s.startswith("BEGIN"))
    commit = next(i for i, s in enumerate(probe.statements) if s.startswith("COMMIT"))
    assert all(begin < i < commit for i, s in enumerate(probe.statements) if "INSERT" in s)
    # The cap check (10,000 by default) reads the loaded index, not COUNT(*) over the rows.
    assert not [s for s in probe.statements if "COUNT(" in s.upper()]


async def test_duplicate_add_embeds_once_and_stores_nothing(
    store: AsyncMemory, counting: CountingEmbedder, probe: ProbedBackend
) -> None:
    listed = await store.list(agent_id=AGENT, limit=100)
    before = next(e for e in listed if e.content == FILLER[3])
    counting.calls.clear()
    probe.start()
    result = await store.write(FILLER[3], agent_id=AGENT)
    probe.stop()
    assert result.decision.kind is WriteKind.NOOP
    assert counting.calls == Counter({"documents": 1, "texts": 1})
    assert probe.calls["search_candidates"] == 1
    assert probe.calls["export_vectors"] == 0
    assert not [s for s in probe.statements if s.startswith("INSERT INTO memories ")]
    # The access bump and the memory.duplicate audit record commit together.
    assert probe.sql_count("BEGIN") == 1 and probe.sql_count("COMMIT") == 1
    assert probe.sql_count("UPDATE MEMORIES SET ACCESS_COUNT") == 1
    assert probe.sql_count("INSERT INTO AUDIT") == 1
    assert await store.count(agent_id=AGENT) == len(FILLER)
    assert result.id == before.id
    confirmed = await store.get(before.id, agent_id=AGENT)
    assert confirmed.access_count == before.access_count + 1
    audit = await store.audit(agent_id=AGENT)
    assert [a.memory_id for a in audit if a.action == "memory.duplicate"] == [result.id]


async def test_a_statement_gets_one_more_lexical_search_and_still_one_embedding(
    store: AsyncMemory, counting: CountingEmbedder, probe: ProbedBackend
) -> None:
    first = await store.write("Lucia prefers dark mode for the editor.", agent_id=AGENT)
    counting.calls.clear()
    probe.start()
    second = await store.write("Lucia now prefers light mode for the editor.", agent_id=AGENT)
    probe.stop()
    assert second.decision.kind is WriteKind.SUPERSEDE
    assert second.decision.old_id == first.id
    assert counting.calls == Counter({"documents": 1, "texts": 1})
    # The text's neighbours, plus the lexical search on the statement's subject and slot.
    assert probe.calls["search_candidates"] == 2
    assert probe.sql_count("BEGIN") == 1 and probe.sql_count("COMMIT") == 1


async def test_add_many_with_dedup_searches_each_item_and_keeps_batch_order(
    store: AsyncMemory, counting: CountingEmbedder, probe: ProbedBackend
) -> None:
    texts = [
        f"Release {i} of the mobile app ships with offline maps for region {i}." for i in range(12)
    ]
    items = [{"content": t} for t in [*texts, texts[4], FILLER[0]]]
    counting.calls.clear()
    probe.start()
    ids = await store.add_many(items, agent_id=AGENT, dedup=True)
    probe.stop()
    assert counting.calls == Counter({"documents": 1, "texts": len(items)})
    assert probe.calls["search_candidates"] == len(items)
    assert probe.sql_count("BEGIN") == 2  # the batch; the confirmation with its audit record
    assert len(set(ids[:12])) == 12
    assert ids[12] == ids[4]  # a repeat within the batch
    stored = {e.id: e.content for e in await store.list(agent_id=AGENT, limit=100)}
    assert [stored[i] for i in ids[:12]] == texts
    assert stored[ids[13]] == FILLER[0]  # a repeat of a stored memory


async def test_a_failing_neighbour_search_fails_the_batch_and_stores_nothing(
    store: AsyncMemory, monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder
) -> None:
    original = SQLiteBackend._candidates_sync
    calls = Counter[str]()

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["search"] += 1
        if calls["search"] == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return original(*args, **kwargs)

    monkeypatch.setattr(SQLiteBackend, "_candidates_sync", flaky)
    texts = [f"Runbook step {i}: rotate the {i}th signing key before the audit." for i in range(20)]
    with pytest.raises(MemoryError):
        await store.add_many([{"content": t} for t in texts], agent_id=AGENT, dedup=True)
    monkeypatch.setattr(SQLiteBackend, "_candidates_sync", original)
    assert await store.count(agent_id=AGENT) == len(FILLER)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def _sql_count(path: str, agent: str, category: str | None = None) -> int:
    with sqlite3.connect(path) as conn:
        sql = "SELECT COUNT(*) FROM memories WHERE agent_id = ? AND scope = 'private'"
        params: list[Any] = [agent]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        return int(conn.execute(sql, params).fetchone()[0])


async def test_count_from_the_index_matches_the_rows(tmp_path: Path, minilm: Embedder) -> None:
    path = str(tmp_path / "count.db")
    config = MemvaultConfig(options=MemoryOptionsConfig(max_memories_per_agent=None))
    async with AsyncMemory(path, embedder=minilm, config=config) as mem:
        ids = await mem.add_many([{"content": t} for t in FILLER], agent_id=AGENT, dedup=False)
        await mem.add("We went hiking on Saturday.", agent_id=AGENT, category="episodic")
        await mem.search("warm the index", agent_id=AGENT)
        assert AGENT in _durable(mem)._indexes
        await mem.delete(ids[0], agent_id=AGENT)
        await mem.add("Timezone: UTC+1", agent_id=AGENT)
        await mem.add("Timezone: UTC+2", agent_id=AGENT)  # supersedes: both rows stay
        for category in (None, MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC):
            expected = _sql_count(path, AGENT, None if category is None else category.value)
            assert await mem.count(agent_id=AGENT, category=category) == expected
        assert await mem.count(agent_id=AGENT) == len(FILLER) + 2
        # Another connection's write is seen (the index is dropped and the rows counted).
        async with AsyncMemory(path, embedder=minilm, config=config) as other:
            await other.add("The ingest service moved to cluster 12.", agent_id=AGENT)
        assert await mem.count(agent_id=AGENT) == _sql_count(path, AGENT) == len(FILLER) + 3


async def test_a_write_at_the_cap_evicts_down_to_the_margin(
    tmp_path: Path, minilm: Embedder
) -> None:
    config = MemvaultConfig(options=MemoryOptionsConfig(max_memories_per_agent=40))
    async with AsyncMemory(str(tmp_path / "cap.db"), embedder=minilm, config=config) as mem:
        texts = [
            f"Build {i} of the data pipeline passed {i * 3} integration checks." for i in range(40)
        ]
        await mem.add_many([{"content": t} for t in texts], agent_id=AGENT, dedup=False)
        await mem.search("warm the index", agent_id=AGENT)
        assert await mem.count(agent_id=AGENT) == 40
        await mem.add("The staging database was resized to 64 GB on Friday.", agent_id=AGENT)
        # 41 > 40: evicted down to 40 - 5% = 38, so the next write has headroom.
        assert await mem.count(agent_id=AGENT) == 38
        assert len(await mem.archived(agent_id=AGENT)) == 3


async def test_the_dense_search_runs_on_one_blas_thread(
    store: AsyncMemory, monkeypatch: pytest.MonkeyPatch, two_blas_threads: None
) -> None:
    seen: list[int | None] = []
    original = AgentIndex.search

    def search(self: AgentIndex, *args: Any, **kwargs: Any) -> Any:
        seen.append(_blas.blas_threads())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AgentIndex, "search", search)
    found = await store.search("which cluster did billing move to", agent_id=AGENT)
    assert found
    assert seen == [1]
    assert _blas.blas_threads() == 2  # restored for the application's own numpy work


def test_single_threaded_blocks_nest_and_restore(two_blas_threads: None) -> None:
    with _blas.single_threaded():
        assert _blas.blas_threads() == 1
        with _blas.single_threaded():
            assert _blas.blas_threads() == 1
        assert _blas.blas_threads() == 1
    assert _blas.blas_threads() == 2
