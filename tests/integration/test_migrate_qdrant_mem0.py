"""``memvault migrate`` to and from the Qdrant and mem0 backends.

SQLite -> Qdrant -> SQLite and SQLite -> mem0 -> SQLite keep every id, field, category,
timestamp, vector (bit for bit), insertion order, the audit log and the archive, and the copies
search exactly like the original. Real stores (SQLite files, local on-disk Qdrant, mem0's local
mode) and the real embedding model; the corpus is small so the module runs in seconds.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memvault.backends.factory import open_backend
from memvault.backends.sqlite import SQLiteBackend
from memvault.cli.app import main
from memvault.migrate import migrate, migrate_urls
from memvault.models import (
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import Embedder, MemoryStore, SharedMemoryStore

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

NOW = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
START = datetime(2025, 6, 1, 8, 0, 0, 250_000, tzinfo=UTC)
AGENTS = ("alice", "bob / ops", "josé")
TEXTS = (
    "The project database is PostgreSQL 16 with pgvector and nightly backups.",
    "Deployed v2.{i} to staging; rolled back after a memory leak in the worker.",
    "Priya is the QA lead and wants detailed test plans on every pull request.",
    "The {i}th release is planned for the last Friday of the month.",
    "The user prefers dark mode and Fira Code as the editor font ({i}).",
    "Ticket XK-{i}471 tracks the flaky login test. 日本茶 ☕ naïve café",
)
QUERIES = ("which database does the project use?", "who is the QA lead?", "dark mode preference")
CATEGORIES = tuple(c for c in MemoryCategory if c is not MemoryCategory.WORKING)


def clock() -> datetime:
    return NOW


async def build_corpus(store: SQLiteBackend) -> None:
    """Every kind of field the data model has, shared knowledge, audit records and archive rows."""
    rng = random.Random(11)
    for agent in AGENTS:
        requests = []
        for i in range(24):
            created = START + timedelta(hours=rng.randrange(0, 24 * 90), microseconds=i)
            requests.append(
                MemoryStoreRequest(
                    content=TEXTS[i % len(TEXTS)].format(i=i),
                    category=CATEGORIES[i % len(CATEGORIES)],
                    metadata=MemoryMetadata(
                        tags=("non-inferable",) if i % 5 == 0 else (),
                        label="prefs" if i % 3 == 0 else None,
                        source="chat" if i % 2 else None,
                        confidence=round(rng.random(), 6),
                        importance=rng.random(),
                        extra={"session": f"s{i // 6}", "n": i, "x": [1, 2.5, None]},
                    ),
                    created_at=created,
                    expires_at=(NOW - timedelta(days=1)) if i % 13 == 0 else None,
                    valid_from=created - timedelta(days=3) if i % 7 == 0 else None,
                )
            )
        ids = await store.store_many(agent, requests)
        await store.store(
            agent,
            MemoryStoreRequest(content="The user now prefers light mode.", supersedes=ids[4]),
        )
        await store.record_access(agent, ids[::4], NOW - timedelta(hours=3))
        await store.archive(agent, [ids[2]], reason="evicted")
    await store.import_entries(
        [
            MemoryEntry(
                id=f"0190b000-0000-7000-8000-00000000{i:04d}",
                agent_id="alice",
                category=MemoryCategory.SEMANTIC,
                content=f"Consolidated summary {i}: the team ships on Fridays.",
                created_at=START - timedelta(days=i),
                updated_at=START,
                consolidated_at=START + timedelta(days=1),
                access_count=i,
                last_accessed_at=START + timedelta(days=2),
                valid_to=START + timedelta(days=400),
            )
            for i in range(3)
        ]
    )
    kept = await store.publish("alice", MemoryStoreRequest(content="Deploys go out on Fridays."))
    gone = await store.publish("bob / ops", MemoryStoreRequest(content="Deploys need a ticket."))
    assert kept and await store.retract("bob / ops", gone)


async def snapshot(store: MemoryStore) -> dict[str, Any]:
    """Entries (JSON, oldest first), storage order, vectors, extra tables and search results."""
    entries = [e.to_json() async for e in store.export_entries()]
    order = [e.id async for e in store.export_in_storage_order()]
    vectors = await store.export_vectors(order)
    assert isinstance(store, SharedMemoryStore)
    tables = {}
    for table in ("audit", "archive"):
        tables[table] = [r async for r in store.export_rows(table)]  # type: ignore[attr-defined]
    hits: list[list[str]] = []
    scores: list[float] = []
    for agent in AGENTS:
        for q in QUERIES:
            found = await store.retrieve(agent, MemoryQuery(text=q, limit=8))
            hits.append([h.id for h in found])
            scores.extend(h.relevance_score or 0.0 for h in found)
    shared = await store.search_shared(MemoryQuery(text="when do deploys go out?"))
    return {
        "entries": entries,
        "order": order,
        "vectors": {k: v.tobytes() for k, v in vectors.items()},
        "dtypes": {v.dtype for v in vectors.values()},
        "tables": tables,
        "hits": hits,
        "scores": scores,
        "shared": [h.id for h in shared],
    }


def same(copy: dict[str, Any], original: dict[str, Any], *, exact_scores: bool) -> None:
    """Everything equal; scores bit-equal on the same backend kind, else to float32 precision
    (the in-memory ranking and SQLite's sum in another order)."""
    assert {k: v for k, v in copy.items() if k != "scores"} == {
        k: v for k, v in original.items() if k != "scores"
    }
    if exact_scores:
        assert copy["scores"] == original["scores"]
    else:
        assert np.allclose(copy["scores"], original["scores"], rtol=1e-5, atol=1e-6)


@pytest.fixture
async def source(tmp_path: Path, minilm: Embedder) -> AsyncIterator[SQLiteBackend]:
    store = SQLiteBackend(tmp_path / "source.db", minilm, clock=clock)
    await store.connect()
    await build_corpus(store)
    try:
        yield store
    finally:
        await store.disconnect()


def _open(url: str, minilm: Embedder) -> MemoryStore:
    store = open_backend(url, embedder=minilm, clock=clock)
    return store


@pytest.mark.parametrize("kind", ["qdrant", "mem0"])
async def test_sqlite_to_adapter_to_sqlite_is_lossless(
    kind: str, source: SQLiteBackend, tmp_path: Path, minilm: Embedder
) -> None:
    if kind == "mem0":
        pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    original = await snapshot(source)
    total = (await source.stats()).total
    assert len(original["tables"]["archive"]) == len(AGENTS)
    assert original["dtypes"] == {np.dtype(np.float32)}
    middle = _open(f"{kind}://{tmp_path}/{kind}", minilm)
    back = SQLiteBackend(tmp_path / "back.db", minilm, clock=clock)
    await middle.connect()
    await back.connect()
    try:
        there = await migrate(source, middle, batch_size=16)
        assert (there.total, there.copied, there.skipped) == (total, total, 0)
        assert {t.name: t.copied for t in there.tables} == {
            "audit": len(original["tables"]["audit"]),
            "archive": len(AGENTS),
        }
        same(await snapshot(middle), original, exact_scores=False)
        # Running it again copies nothing (ids already there) and still verifies.
        again = await migrate(source, middle)
        assert (again.copied, again.skipped) == (0, total)
        home = await migrate(middle, back, batch_size=10)
        assert (home.copied, home.skipped) == (total, 0)
        same(await snapshot(back), original, exact_scores=True)
    finally:
        await middle.disconnect()
        await back.disconnect()
    # The adapter's copy is durable: reopened from disk it still equals the original.
    reopened = _open(f"{kind}://{tmp_path}/{kind}", minilm)
    await reopened.connect()
    try:
        same(await snapshot(reopened), original, exact_scores=False)
    finally:
        await reopened.disconnect()


async def test_migrate_urls_between_qdrant_and_mem0(
    source: SQLiteBackend, tmp_path: Path, minilm: Embedder
) -> None:
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    original = await snapshot(source)
    await source.disconnect()  # migrate_urls opens the file itself
    src = f"sqlite:///{tmp_path}/source.db"
    q, m = f"qdrant://{tmp_path}/q", f"mem0://{tmp_path}/m0?collection=team"
    first = await migrate_urls(src, q, embedder=minilm)
    second = await migrate_urls(q, m, embedder=minilm)
    assert first.total == second.total == len(original["entries"])
    assert second.source == f"qdrant://{tmp_path}/q"
    assert second.destination == f"mem0://{tmp_path}/m0?collection=team"
    copy = _open(m, minilm)
    await copy.connect()
    try:
        same(await snapshot(copy), original, exact_scores=False)
    finally:
        await copy.disconnect()
    await source.connect()  # the fixture disconnects it


def test_cli_migrates_to_qdrant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    from memvault import Memory

    with Memory(str(tmp_path / "a.db")) as mem:
        mem.add_many(
            [{"content": f"fact {i} about the release train"} for i in range(5)], agent_id="dev"
        )
    capsys.readouterr()
    code = main(["migrate", "--from", str(tmp_path / "a.db"), "--to", f"qdrant://{tmp_path}/q"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "5 copied, 0 skipped" in out
    code = main(["migrate", "--from", str(tmp_path / "a.db"), "--to", "qdrant://"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "names no directory" in err
    # A mistyped source directory is refused, not created empty and "migrated".
    code = main(["migrate", "--from", f"mem0://{tmp_path}/nope", "--to", str(tmp_path / "b.db")])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "does not exist" in err
    assert not (tmp_path / "nope").exists()
