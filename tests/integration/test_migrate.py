"""``memvault migrate``: lossless round trips, resuming, verification, model checks, the CLI.

The stores are real (SQLite files, PostgreSQL in a throwaway schema) and so is the embedding
model; corpora stay small so the module runs in seconds.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import pytest

from memvault import Memory
from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.cli.app import main
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import (
    EmbeddingModelChangedError,
    MemoryConfigError,
    MemoryStoreError,
    MemoryValidationError,
)
from memvault.migrate import MigrationReport, migrate, migrate_urls
from memvault.models import (
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import Embedder, MemoryStore, RowTableStore, SharedKnowledgeStore
from postgres_server import SchemaFactory

NOW = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
START = datetime(2025, 6, 1, 8, 0, 0, 250_000, tzinfo=UTC)
AGENTS = ("alice", "bob", "carol / ops", "josé")
QUERIES = (
    "which database does the project use?",
    "what happened with the deployment rollback?",
    "who is the QA lead?",
    "when is the release planned?",
    "dark mode preference",
)
TOPICS = (
    ("database", "The project database is {x} with pgvector and nightly backups."),
    ("deploy", "Deployed {x} to staging; rolled back after a memory leak in the worker."),
    ("people", "{x} is the QA lead and wants detailed test plans on every pull request."),
    ("release", "The {x} release is planned for the last Friday of the month."),
    ("prefs", "The user prefers dark mode and {x} as the editor font."),
    ("review", "Code reviews of {x} need two approvals before merging."),
    ("ticket", "Ticket {x} tracks the flaky login test on the CI runners."),
    ("travel", "Flew to {x} for the offsite; the hotel was next to the station."),
)
FILLERS = (
    "PostgreSQL 16",
    "v2.1",
    "Priya",
    "spring",
    "Fira Code",
    "the billing service",
    "XK-4471",
    "Lisbon",
    "SQLite",
    "v3.0-rc1",
    "Tomás",
    "autumn",
    "JetBrains Mono",
    "the search API",
    "QA-981",
    "Kraków",
)
CATEGORIES = list(MemoryCategory)
StoreT = TypeVar("StoreT", bound=MemoryStore)


def clock() -> datetime:
    return NOW


def _requests(rng: random.Random, agent: str, n: int) -> list[MemoryStoreRequest]:
    """``n`` varied memories; created_at is shuffled so insertion order != time order."""
    out = []
    for i in range(n):
        topic, template = TOPICS[rng.randrange(len(TOPICS))]
        text = template.format(x=FILLERS[rng.randrange(len(FILLERS))])
        if i % 7 == 0:
            text += f" (note {i} of {agent}: 日本茶 ☕ naïve café)"
        created = START + timedelta(hours=rng.randrange(0, 24 * 120), microseconds=i)
        extra: dict[str, Any] = {"session": f"s{i // 6}", "topic": topic}
        if i % 5 == 0:
            extra = {"zeta": [1, 2.5, None], "alpha": {"nested": True}, **extra}
        meta = MemoryMetadata(
            tags=tuple(t for t in (topic, "non-inferable" if i % 9 == 0 else "") if t),
            label=topic if i % 3 == 0 else None,
            source="chat" if i % 2 else None,
            confidence=round(rng.random(), 6),
            importance=rng.random(),
            extra=extra,
        )
        out.append(
            MemoryStoreRequest(
                content=text,
                category=CATEGORIES[i % len(CATEGORIES)],
                metadata=meta,
                created_at=created,
                expires_at=(NOW - timedelta(days=1)) if i % 23 == 0 else None,
                valid_from=created - timedelta(days=3) if i % 11 == 0 else None,
            )
        )
    return out


async def build_corpus(store: MemoryStore, per_agent: int = 60, seed: int = 7) -> int:
    """Fill ``store`` with every kind of field the data model has; returns how many entries."""
    rng = random.Random(seed)
    total = 0
    for agent in AGENTS:
        ids = await store.store_many(agent, _requests(rng, agent, per_agent))
        total += len(ids)
        old = ids[1]
        await store.store(
            agent,
            MemoryStoreRequest(
                content="The user now prefers light mode in every editor.",
                created_at=START + timedelta(days=200),
                supersedes=old,
            ),
        )
        total += 1
        await store.record_access(agent, ids[::4], NOW - timedelta(hours=3))
        await store.record_access(agent, ids[::8], NOW - timedelta(hours=1))
    # Fields only an import can set (consolidation results).
    imported = [
        MemoryEntry(
            id=f"0190b000-0000-7000-8000-00000000{i:04d}",
            agent_id="alice",
            category=MemoryCategory.SEMANTIC,
            content=f"Consolidated summary {i}: the team ships on Fridays and reviews on Mondays.",
            created_at=START - timedelta(days=i),
            updated_at=START,
            consolidated_at=START + timedelta(days=1),
            access_count=i,
            last_accessed_at=START + timedelta(days=2),
            valid_to=START + timedelta(days=400),
        )
        for i in range(5)
    ]
    total += await store.import_entries(imported)
    return total


async def snapshot(store: MemoryStore) -> tuple[list[dict[str, Any]], list[str]]:
    """Every entry as JSON (oldest first) and every id in storage order."""
    entries = [e.to_json() async for e in store.export_entries()]
    order = [e.id async for e in store.export_in_storage_order()]
    return entries, order


async def searches(store: MemoryStore) -> list[list[tuple[str, float | None]]]:
    out = []
    for agent in AGENTS:
        for q in QUERIES:
            hits = await store.retrieve(agent, MemoryQuery(text=q, limit=10))
            out.append([(h.id, h.relevance_score) for h in hits])
    return out


async def opened(store: StoreT) -> StoreT:
    await store.connect()
    return store


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """A SQLite store holding the corpus, built once; tests work on copies of it."""
    path = tmp_path_factory.mktemp("corpus") / "source.db"

    async def build() -> None:
        store = await opened(SQLiteBackend(path, minilm, clock=clock))
        await build_corpus(store)
        await store.disconnect()

    asyncio.run(build())
    return path


@pytest.fixture
async def source(
    corpus_file: Path, tmp_path: Path, minilm: Embedder
) -> AsyncIterator[SQLiteBackend]:
    """A connected copy of the corpus store."""
    path = tmp_path / "source.db"
    shutil.copyfile(corpus_file, path)
    store = await opened(SQLiteBackend(path, minilm, clock=clock))
    try:
        yield store
    finally:
        await store.disconnect()


# -- lossless round trip ----------------------------------------------------------------------


@pytest.mark.postgres
async def test_sqlite_to_postgres_to_sqlite_is_lossless(
    source: SQLiteBackend,
    tmp_path: Path,
    minilm: Embedder,
    postgres_url: str,
    pg_schemas: SchemaFactory,
) -> None:
    expected_total = (await source.stats()).total
    assert 240 <= expected_total <= 300
    sep = "&" if "?" in postgres_url else "?"
    pg = await opened(
        PostgresBackend(f"{postgres_url}{sep}schema={pg_schemas()}", minilm, clock=clock)
    )
    back = await opened(SQLiteBackend(tmp_path / "back.db", minilm, clock=clock))
    try:
        seen: list[tuple[int, int]] = []
        there = await migrate(source, pg, batch_size=64, progress=lambda d, t: seen.append((d, t)))
        assert (there.total, there.copied, there.skipped) == (expected_total, expected_total, 0)
        assert there.agents == len(AGENTS)
        assert there.sampled > 0
        assert seen[-1] == (expected_total, expected_total)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        home = await migrate(pg, back)
        assert (home.copied, home.skipped) == (expected_total, 0)

        original, order = await snapshot(source)
        for store in (pg, back):
            entries, stored = await snapshot(store)
            assert entries == original
            assert stored == order
        ids = [e["id"] for e in original]
        want = await source.export_vectors(ids)
        for store in (pg, back):
            got = await store.export_vectors(ids)
            assert set(got) == set(want)
            for mid in ids:
                assert got[mid].dtype == np.float32
                assert got[mid].tobytes() == want[mid].tobytes()
        # The copy searches exactly like the original: same ids, same scores.
        before = await searches(source)
        assert any(before)
        assert await searches(back) == before
        on_pg = await searches(pg)
        assert [[i for i, _ in hits] for hits in on_pg] == [[i for i, _ in h] for h in before]
        assert (await pg.stats()).by_category == (await source.stats()).by_category
    finally:
        await pg.disconnect()
        await back.disconnect()


@pytest.mark.postgres
async def test_many_pages_round_trip(
    tmp_path: Path, postgres_url: str, pg_schemas: SchemaFactory
) -> None:
    # More rows than one export page (500) and several batches; synthetic unit vectors, so
    # nothing is embedded.
    embedder = HashingEmbedder(32)
    rng = np.random.default_rng(3)
    entries = [
        MemoryEntry(
            id=f"0190c000-0000-7000-8000-{i:012d}",
            agent_id=f"agent-{i % 3}",
            category=CATEGORIES[i % 5],
            content=f"synthetic memory number {i}",
            created_at=START + timedelta(minutes=(i * 7919) % 701),
            updated_at=START,
        )
        for i in range(700)
    ]
    raw = rng.standard_normal((len(entries), 32)).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    vectors = {e.id: raw[i] for i, e in enumerate(entries)}
    first = await opened(SQLiteBackend(tmp_path / "a.db", embedder))
    pg = await opened(PostgresBackend(postgres_url, embedder, schema=pg_schemas()))
    last = await opened(SQLiteBackend(tmp_path / "b.db", embedder))
    try:
        assert await first.import_with_vectors(entries, vectors) == len(entries)
        assert (await migrate(first, pg, batch_size=500)).copied == len(entries)
        assert (await migrate(pg, last, batch_size=333)).copied == len(entries)
        assert await snapshot(last) == await snapshot(first)
        got = await last.export_vectors(list(vectors))
        assert all(got[k].tobytes() == v.tobytes() for k, v in vectors.items())
    finally:
        for store in (first, pg, last):
            await store.disconnect()


async def test_memory_and_composite_stores_migrate_too(
    source: SQLiteBackend, minilm: Embedder, tmp_path: Path
) -> None:
    working = InMemoryBackend(minilm, clock=clock)
    comp = await opened(
        CompositeBackend(
            {MemoryCategory.WORKING: working},
            SQLiteBackend(tmp_path / "durable.db", minilm, clock=clock),
            clock=clock,
        )
    )
    back = await opened(SQLiteBackend(tmp_path / "back.db", minilm, clock=clock))
    try:
        report = await migrate(source, comp)
        assert report.copied == (await source.stats()).total
        assert await working.count("alice") == await source.count(
            "alice", category=MemoryCategory.WORKING
        )
        await migrate(comp, back)
        assert (await snapshot(back))[0] == (await snapshot(source))[0]
        # Each child keeps the source's order of its entries, and the copy keeps the children's.
        order = [e.id async for e in source.export_in_storage_order()]
        routed = [e.id async for e in working.export_in_storage_order()]
        assert routed == [i for i in order if i in set(routed)]
        assert (await snapshot(back))[1] == (await snapshot(comp))[1]
    finally:
        await comp.disconnect()
        await back.disconnect()


async def test_shared_knowledge_is_copied_with_its_state(tmp_path: Path) -> None:
    embedder = HashingEmbedder(64)
    src = await opened(SQLiteBackend(tmp_path / "a.db", embedder, clock=clock))
    dst = await opened(SQLiteBackend(tmp_path / "b.db", embedder, clock=clock))
    try:
        if not src.supports_shared_access:
            pytest.skip("this build has no shared knowledge")
        shared = cast(SharedKnowledgeStore, src)
        await src.store("alice", MemoryStoreRequest(content="private: alice's deploy notes"))
        kept = await shared.publish(
            "alice", MemoryStoreRequest(content="Deploys go out on Fridays")
        )
        gone = await shared.publish("bob", MemoryStoreRequest(content="Deploys need a ticket"))
        assert await shared.retract("bob", gone)
        report = await migrate(src, dst)
        assert report.copied == 3
        assert await snapshot(dst) == await snapshot(src)
        q = MemoryQuery(text="when do deploys go out?")
        copy = cast(SharedKnowledgeStore, dst)
        assert [h.id for h in await copy.search_shared(q)] == [kept]
        retracted = await dst.get("bob", gone)
        assert retracted is not None and retracted.to_json()["retracted_at"] is not None
    finally:
        await src.disconnect()
        await dst.disconnect()


# -- resuming ---------------------------------------------------------------------------------


class Crash(Exception):
    """Stands in for a crash or Ctrl-C in the middle of a migration."""


async def test_an_interrupted_migration_resumes_and_verifies(
    source: SQLiteBackend, tmp_path: Path, minilm: Embedder
) -> None:
    total = (await source.stats()).total
    dest = await opened(SQLiteBackend(tmp_path / "dest.db", minilm, clock=clock))
    try:

        def crash_after_three_batches(done: int, _total: int) -> None:
            if done >= 60:
                raise Crash

        with pytest.raises(Crash):
            await migrate(source, dest, batch_size=20, progress=crash_after_three_batches)
        assert (await dest.stats()).total == 60
        report = await migrate(source, dest, batch_size=20)
        assert (report.copied, report.skipped, report.total) == (total - 60, 60, total)
        assert await snapshot(dest) == await snapshot(source)
        again = await migrate(source, dest)
        assert (again.copied, again.skipped) == (0, total)
        assert "0 copied" in again.summary() and f"{total} skipped" in again.summary()
    finally:
        await dest.disconnect()


async def test_a_destination_holding_part_of_the_data_is_completed(
    source: SQLiteBackend, tmp_path: Path, minilm: Embedder
) -> None:
    dest = await opened(SQLiteBackend(tmp_path / "dest.db", minilm, clock=clock))
    try:
        everything = [e async for e in source.export_entries()]
        part = everything[::3]
        vectors = await source.export_vectors([e.id for e in part])
        await dest.import_with_vectors(part, vectors)
        report = await migrate(source, dest, batch_size=50)
        assert report.skipped == len(part)
        assert report.copied == len(everything) - len(part)
        assert (await snapshot(dest))[0] == (await snapshot(source))[0]
    finally:
        await dest.disconnect()


# -- verification and refusals ----------------------------------------------------------------


async def test_a_destination_with_extra_memories_does_not_verify(
    source: SQLiteBackend, minilm: Embedder
) -> None:
    dest = await opened(InMemoryBackend(minilm, clock=clock))
    await dest.store("someone-else", MemoryStoreRequest(content="not from the source"))
    with pytest.raises(MemoryStoreError, match=r"did not verify: .* in the destination"):
        await migrate(source, dest)


async def test_a_changed_copy_does_not_verify(source: SQLiteBackend, minilm: Embedder) -> None:
    first = await anext(source.export_entries("bob"))
    tampered = first.model_copy(update={"content": "something else entirely"})
    dest = await opened(InMemoryBackend(minilm, clock=clock))
    await dest.import_with_vectors([tampered], await source.export_vectors([first.id]))
    # Sample everything so the tampered entry is certainly compared.
    with pytest.raises(MemoryStoreError, match=f"memory {first.id} of agent 'bob' differs"):
        await migrate(source, dest, sample_size=10_000)


async def test_a_different_embedding_model_is_refused_before_copying(
    source: SQLiteBackend,
) -> None:
    for other in (HashingEmbedder(384), HashingEmbedder(64)):
        dest = InMemoryBackend(other)
        with pytest.raises(MemoryConfigError) as info:
            await migrate(source, dest)
        message = str(info.value)
        assert source.embedder.model_id in message and other.model_id in message
        assert not dest.is_connected  # refused before anything was opened or copied


async def test_a_store_built_with_another_model_is_refused(
    tmp_path: Path, minilm: Embedder
) -> None:
    hashed = tmp_path / "hashed.db"
    store = await opened(SQLiteBackend(hashed, HashingEmbedder(384)))
    await store.store("a", MemoryStoreRequest(content="built with the hashing model"))
    await store.disconnect()
    src = await opened(SQLiteBackend(tmp_path / "src.db", minilm))
    await src.store("a", MemoryStoreRequest(content="built with MiniLM"))
    await src.disconnect()
    with pytest.raises(EmbeddingModelChangedError, match="hashing-v1-384"):
        await migrate_urls(str(tmp_path / "src.db"), str(hashed), embedder=minilm)


async def test_bad_arguments_are_refused(source: SQLiteBackend, tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="same store"):
        await migrate(source, source)
    with pytest.raises(MemoryValidationError):
        await migrate(source, InMemoryBackend(source.embedder), batch_size=0)
    with pytest.raises(MemoryConfigError, match="does not exist"):
        await migrate_urls(str(tmp_path / "nope.db"), "memory://")
    with pytest.raises(MemoryConfigError, match="same store"):
        await migrate_urls(str(tmp_path / "source.db"), f"sqlite:///{tmp_path}/./source.db")
    with pytest.raises(MemoryConfigError, match="ftp"):
        await migrate_urls("memory://", "ftp://host/x")


# -- extra tables (archive, audit) ------------------------------------------------------------


class TabledStore(InMemoryBackend):
    """An in-memory store with extra keyed tables, as archive/audit-carrying backends have."""

    def __init__(self, embedder: Embedder, tables: Mapping[str, list[dict[str, Any]]]) -> None:
        super().__init__(embedder)
        self.tables = {name: {r["id"]: dict(r) for r in rows} for name, rows in tables.items()}
        self.batches: list[int] = []

    def row_tables(self) -> Sequence[str]:
        return sorted(self.tables)

    async def export_rows(self, table: str) -> AsyncIterator[dict[str, Any]]:
        for key in sorted(self.tables[table]):
            yield dict(self.tables[table][key])

    async def import_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        self.batches.append(len(rows))
        fresh = [r for r in rows if r["id"] not in self.tables[table]]
        for r in fresh:
            self.tables[table][r["id"]] = dict(r)
        return len(fresh)

    async def count_rows(self, table: str) -> int:
        return len(self.tables[table])


async def test_extra_tables_both_stores_have_are_copied() -> None:
    embedder = HashingEmbedder(32)
    audit = [
        {
            "id": f"a{i:03d}",
            "at": f"2026-01-01T00:00:{i:02d}+00:00",
            "actor": "agent-a",
            "action": "shared.publish",
            "agent_id": "agent-a",
            "memory_id": None,
            "details": {"n": i},
        }
        for i in range(25)
    ]
    sessions = [{"id": f"s{i:03d}", "state": {"turns": i}} for i in range(3)]
    src = TabledStore(embedder, {"audit": audit, "sessions": sessions})
    dest = TabledStore(embedder, {"audit": audit[:5]})
    assert isinstance(src, RowTableStore)
    await src.connect()
    await src.store("a", MemoryStoreRequest(content="a memory"))
    report = await migrate(src, dest, batch_size=10)
    assert [(t.name, t.copied, t.skipped) for t in report.tables] == [("audit", 20, 5)]
    assert report.tables_not_copied == ("sessions",)
    assert dest.tables["audit"] == src.tables["audit"]
    assert dest.batches == [10, 10, 5]
    assert "audit: 20 rows copied" in report.summary()
    assert "sessions" in report.summary()
    # A destination without a sessions table: the audit rows are copied, sessions is named.
    plain = InMemoryBackend(embedder)
    report = await migrate(src, plain)
    assert [t.name for t in report.tables] == ["audit"]
    assert report.tables_not_copied == ("sessions",)
    assert isinstance(report, MigrationReport)


# -- the CLI ----------------------------------------------------------------------------------


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMVAULT_* setting of the machine and no ./memvault.yaml leaks into a CLI run."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.usefixtures("cli_env")
def test_cli_migrates_between_two_sqlite_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with Memory(src) as mem:
        mem.add_many(
            [
                {"content": f"fact {i} about the release train", "category": "episodic"}
                for i in range(7)
            ],
            agent_id="dev-1",
        )
        mem.add("Prefers Litestar over Flask", agent_id="dev-2", tags=["non-inferable"])
    code, out, err = cli(capsys, "migrate", "--from", src, "--to", dst, "--batch-size", "3")
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    assert "8 copied, 0 skipped" in out and "8 verified (2 agents" in out
    code, out, err = cli(capsys, "migrate", "--from", f"sqlite:///{src}", "--to", dst)
    assert (code, err) == (0, "")
    assert "0 copied, 8 skipped" in out
    # Searching records accesses (a change of the source), so it comes after the migrations.
    with Memory(src) as a, Memory(dst) as b:
        assert b.export() == a.export()
        assert [h.id for h in b.search("web framework", agent_id="dev-2")] == [
            h.id for h in a.search("web framework", agent_id="dev-2")
        ]


@pytest.mark.usefixtures("cli_env")
def test_cli_migrates_memory_to_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dst = tmp_path / "new.db"
    code, out, err = cli(capsys, "migrate", "--from", "memory://", "--to", str(dst))
    assert (code, err) == (0, "")
    assert "0 copied, 0 skipped" in out
    assert dst.exists()


@pytest.mark.usefixtures("cli_env")
def test_cli_failures_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with Memory(src) as mem:
        mem.add("one memory", agent_id="x")
    with Memory(dst) as mem:
        mem.add("a memory the source does not have", agent_id="y")
    cases = [
        (("--from", "ftp://host/db", "--to", dst), "unsupported storage URL scheme"),
        (("--from", str(tmp_path / "missing.db"), "--to", dst), "does not exist"),
        (("--from", src, "--to", src), "same store"),
        (("--from", src, "--to", dst), "did not verify"),
        (("--from", src, "--to", dst, "--embedder", "hashing:64"), "hashing-v1-64"),
        (("--from", src, "--to", dst, "--batch-size", "0"), "batch-size"),
    ]
    for args, message in cases:
        code, out, err = cli(capsys, "migrate", *args)
        assert code == 2, (args, out, err)
        assert out == ""
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, (args, err)
        assert message in lines[0], (args, lines[0])
