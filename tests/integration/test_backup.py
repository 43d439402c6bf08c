"""``memvault backup`` / ``restore-backup``: online, consistent copies of SQLite and PostgreSQL
stores that restore to the same memories, audit and archive, and search the same."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from memvault.backends.factory import open_backend
from memvault.backup import backup_store, restore_backup
from memvault.errors import MemoryCapabilityError, MemoryConfigError
from memvault.models import MemoryCategory, MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder, MemoryStore
from postgres_server import SchemaFactory


def _pg_url(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema={schema}"


@pytest.fixture(params=["sqlite", "postgres"])
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(the store's URL, the URL to restore into)."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db"), str(tmp_path / "restored.db")
    base = request.getfixturevalue("postgres_url")
    schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
    return _pg_url(base, schemas()), _pg_url(base, schemas())


async def _fill(store: MemoryStore) -> dict[str, str]:
    ids = {
        "tea": await store.store("alice", MemoryStoreRequest(content="Alice drinks green tea.")),
        "vpn": await store.store(
            "alice", MemoryStoreRequest(content="The VPN endpoint is vpn2.example.com.")
        ),
        "met": await store.store(
            "alice",
            MemoryStoreRequest(
                content="Alice met Bob at the summit.", category=MemoryCategory.EPISODIC
            ),
        ),
        "bob": await store.store("bob", MemoryStoreRequest(content="Bob is allergic to peanuts.")),
    }
    archiver: object = store
    await archiver.archive("alice", [ids["met"]], reason="evict")  # type: ignore[attr-defined]
    await store.delete("bob", ids["bob"])
    return ids


async def _snapshot(store: MemoryStore) -> dict[str, object]:
    rows: object = store
    audit = [r async for r in rows.export_rows("audit")]  # type: ignore[attr-defined]
    archive = [r async for r in rows.export_rows("archive")]  # type: ignore[attr-defined]
    listed = [e.to_json() async for e in store.export_entries()]
    entries = sorted(listed, key=lambda d: str(d["id"]))
    hits = await store.retrieve("alice", MemoryQuery(text="what does Alice drink?", limit=3))
    return {
        "entries": entries,
        "audit": audit,
        "archive": archive,
        "top": [h.id for h in hits],
    }


async def test_backup_restores_the_same_store(
    urls: tuple[str, str], tmp_path: Path, minilm: Embedder
) -> None:
    url, restored_url = urls
    store = open_backend(url, embedder=minilm)
    await store.connect()
    try:
        ids = await _fill(store)
        before = await _snapshot(store)
    finally:
        await store.disconnect()
    target = tmp_path / "store.backup"
    stages: list[tuple[str, int, int]] = []
    report = await asyncio.to_thread(
        backup_store, url, target, progress=lambda *a: stages.append(a)
    )
    assert report.memories == 2  # tea and vpn: met was archived, bob deleted
    assert target.is_file() and report.bytes == target.stat().st_size
    assert stages and stages[-1][1] == stages[-1][2]  # the progress bar reached its end
    with pytest.raises(MemoryConfigError, match="exists already"):
        backup_store(url, target)
    restored = await asyncio.to_thread(restore_backup, target, restored_url)
    assert restored.memories == 2
    copy = open_backend(restored_url, embedder=minilm)
    await copy.connect()
    try:
        after = await _snapshot(copy)
        assert after == before
        assert after["top"][0] == ids["tea"]  # type: ignore[index]
        # The restored store is a working store: it takes writes.
        await copy.store("alice", MemoryStoreRequest(content="Alice moved to Lisbon."))
    finally:
        await copy.disconnect()
    with pytest.raises(MemoryConfigError):
        restore_backup(target, restored_url)  # the target holds a store now


async def test_sqlite_backup_is_consistent_while_a_writer_commits(
    tmp_path: Path, minilm: Embedder
) -> None:
    # A writer keeps committing (memory + audit in one transaction) while the backup runs:
    # the copy must hold an instant of the store: every memory with its audit record.
    path = tmp_path / "busy.db"
    store = open_backend(str(path), embedder=minilm)
    await store.connect()
    try:
        vec = minilm.embed_documents(["seed"])[0]
        await store.store_many(
            "ops",
            [MemoryStoreRequest(content=f"Seed {i}.") for i in range(300)],
            vectors=[vec] * 300,
        )
    finally:
        await store.disconnect()
    stop = threading.Event()

    def writer() -> None:
        async def go() -> None:
            busy = open_backend(str(path), embedder=minilm)
            await busy.connect()
            i = 0
            while not stop.is_set():
                await busy.store_many(
                    "ops", [MemoryStoreRequest(content=f"Busy {i}.")], vectors=[vec]
                )
                i += 1
            await busy.disconnect()

        asyncio.run(go())

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = backup_store(str(path), tmp_path / "busy.backup")
    finally:
        stop.set()
        thread.join()
    with sqlite3.connect(tmp_path / "busy.backup") as conn:
        memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        audited = conn.execute(
            "SELECT COUNT(*) FROM audit WHERE action = 'memory.store'"
        ).fetchone()[0]
        fts = conn.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert memories == audited == fts == report.memories >= 300


def test_backup_refuses_what_it_cannot_copy(tmp_path: Path) -> None:
    with pytest.raises(MemoryCapabilityError):
        backup_store("memory://", tmp_path / "x.backup")
    with pytest.raises(MemoryConfigError, match="does not exist"):
        backup_store(str(tmp_path / "missing.db"), tmp_path / "x.backup")
    (tmp_path / "notes.txt").write_text("not a store")
    with pytest.raises(MemoryConfigError):
        restore_backup(tmp_path / "notes.txt", str(tmp_path / "new.db"))
