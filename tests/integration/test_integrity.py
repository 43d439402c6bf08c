"""``memvault check`` finds damage to every derived structure; ``memvault repair`` rebuilds it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memvault.backends.factory import open_backend
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import MemoryCapabilityError, MemoryConfigError
from memvault.integrity import check_store, repair_store
from memvault.models import MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder
from postgres_server import SchemaFactory


async def _fill(url: str, embedder: Embedder) -> list[str]:
    store = open_backend(url, embedder=embedder)
    await store.connect()
    try:
        ids = [
            await store.store("alice", MemoryStoreRequest(content=text))
            for text in (
                "Alice drinks green tea every morning.",
                "The VPN endpoint is vpn2.example.com.",
                "Alice's cat is called Miso.",
                "The build server reboots on Sundays.",
            )
        ]
        archiver: object = store
        await archiver.archive("alice", [ids[3]], reason="evict")  # type: ignore[attr-defined]
        shared: object = store
        await shared.publish("alice", MemoryStoreRequest(content="Deploys freeze on Fridays."))  # type: ignore[attr-defined]
    finally:
        await store.disconnect()
    return ids


async def _search(url: str, embedder: Embedder, text: str) -> list[str]:
    store = open_backend(url, embedder=embedder)
    await store.connect()
    try:
        return [h.id for h in await store.retrieve("alice", MemoryQuery(text=text, limit=3))]
    finally:
        await store.disconnect()


def _codes(report: object) -> set[str]:
    return {f.code for f in report.findings}  # type: ignore[attr-defined]


async def test_sqlite_check_finds_each_kind_of_damage_and_repair_fixes_it(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "store.db"
    url = str(path)
    ids = await _fill(url, minilm)
    clean = await asyncio.to_thread(check_store, url, embedder=minilm)
    assert clean.ok, clean.summary()
    assert clean.checked["memories"] == 4  # three private, one shared
    with sqlite3.connect(path) as conn:
        rowid = {mid: r for mid, r in conn.execute("SELECT id, rowid FROM memories").fetchall()}
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid[ids[0]],))
        conn.execute("UPDATE memories_fts SET body = 'nonsense' WHERE rowid = ?", (rowid[ids[1]],))
        conn.execute("DELETE FROM memory_vectors WHERE memory_rowid = ?", (rowid[ids[2]],))
        conn.execute(
            "UPDATE memory_vectors SET vector = x'00' WHERE memory_rowid = ?", (rowid[ids[1]],)
        )
        # As if a restore had re-inserted the entry and died before dropping the archive row.
        conn.execute(
            "INSERT INTO archive (id, memory_id, agent_id, reason, archived_at, entry)"
            " SELECT 'arch-x', id, agent_id, 'evict', 0, '{}' FROM memories WHERE id = ?",
            (ids[0],),
        )
        conn.execute("DELETE FROM audit WHERE action = 'shared.publish'")
    stages: list[tuple[str, int, int]] = []
    damaged = await asyncio.to_thread(
        check_store, url, embedder=minilm, progress=lambda *a: stages.append(a)
    )
    assert _codes(damaged) == {
        "fts_missing",
        "fts_stale",
        "vector_missing",
        "vector_bad",
        "archived_and_live",
        "audit_missing",
    }, damaged.summary()
    assert stages and stages[-1][1] == stages[-1][2]
    by_code = {f.code: f for f in damaged.findings}
    assert by_code["fts_missing"].examples == (ids[0],)
    assert by_code["vector_missing"].examples == (ids[2],)
    # The model check: the store was written by MiniLM, not by a hashing model.
    other = await asyncio.to_thread(check_store, url, embedder=HashingEmbedder(384))
    assert "model" in _codes(other)
    report = await asyncio.to_thread(repair_store, url, minilm)
    assert report.rebuilt["full-text rows"] == 4
    assert report.rebuilt["vectors re-embedded"] == 2
    assert report.rebuilt["restores finished"] == 1
    after = await asyncio.to_thread(check_store, url, embedder=minilm)
    # Repair rebuilds derived data; a lost audit record is history it cannot invent.
    assert _codes(after) == {"audit_missing"}, after.summary()
    assert (await _search(url, minilm, "what does Alice drink?"))[0] == ids[0]
    assert (await _search(url, minilm, "Miso the cat"))[0] == ids[2]


def test_a_damaged_file_is_a_finding_and_bad_targets_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    report = check_store(str(path))
    assert _codes(report) == {"integrity"}
    with pytest.raises(MemoryConfigError):
        check_store(str(tmp_path / "missing.db"))
    with pytest.raises(MemoryCapabilityError):
        check_store("memory://")


async def test_postgres_check_and_repair(
    postgres_url: str, pg_schemas: SchemaFactory, minilm: Embedder
) -> None:
    schema = pg_schemas()
    sep = "&" if "?" in postgres_url else "?"
    url = f"{postgres_url}{sep}schema={schema}"
    ids = await _fill(url, minilm)
    clean = await asyncio.to_thread(check_store, url, embedder=minilm)
    assert clean.ok, clean.summary()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        conn.execute(
            "UPDATE memories SET term_freqs = '{\"bogus\": 1}'::jsonb, doc_len = 1 WHERE id = %s",
            [ids[0]],
        )
        conn.execute("UPDATE store_stats SET n = n + 5")
        conn.execute("DELETE FROM agent_stats")
    damaged = await asyncio.to_thread(check_store, url, embedder=minilm)
    assert _codes(damaged) == {"lexical_stale", "stats_stale"}, damaged.summary()
    report = await asyncio.to_thread(repair_store, url, minilm)
    assert report.rebuilt["lexical rows"] == 4
    after = await asyncio.to_thread(check_store, url, embedder=minilm)
    assert after.ok, after.summary()
    assert (await _search(url, minilm, "what does Alice drink?"))[0] == ids[0]
