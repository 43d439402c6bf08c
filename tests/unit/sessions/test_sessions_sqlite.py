"""SQLiteSessionStore on real files: persistence, sharing the file with the memories, refusals."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConnectionError, MemoryRetrievalError
from memvault.memory import AsyncMemory
from memvault.models import ChatMessage
from memvault.sessions import SQLiteSessionStore

SID = "0123456789ab"
HISTORY = [
    ChatMessage(role="user", content="Remind me what we decided about auth."),
    ChatMessage(role="assistant", content="JWT with short-lived access tokens."),
]


async def test_sessions_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "memvault.db"
    first = SQLiteSessionStore(path)
    await first.save("dev-1", SID, HISTORY)
    await first.close()
    second = SQLiteSessionStore(path)
    try:
        latest = await second.latest("dev-1")
    finally:
        await second.close()
    assert latest is not None and latest.messages == tuple(HISTORY)


async def test_the_file_is_in_wal_mode_with_a_sessions_table(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteSessionStore(path)
    await store.save("dev-1", SID, HISTORY)
    await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = conn.execute("SELECT messages, message_count FROM sessions").fetchone()
    assert row[1] == 2
    assert "JWT with short-lived access tokens." in row[0]


@pytest.mark.parametrize("sessions_first", [True, False])
async def test_sessions_and_memories_share_one_file(tmp_path: Path, sessions_first: bool) -> None:
    path = tmp_path / "memvault.db"
    mem = AsyncMemory(str(path), embedder=HashingEmbedder(dimension=64))
    store = SQLiteSessionStore(path)
    try:
        if sessions_first:
            await store.save("dev-1", SID, HISTORY)
            new_id = await mem.add("Prefers Litestar over Flask", agent_id="dev-1")
        else:
            new_id = await mem.add("Prefers Litestar over Flask", agent_id="dev-1")
            await store.save("dev-1", SID, HISTORY)
        assert [e.id for e in await mem.list(agent_id="dev-1")] == [new_id]
        latest = await store.latest("dev-1")
        assert latest is not None and latest.messages == tuple(HISTORY)
    finally:
        await mem.close()
        await store.close()


async def test_two_stores_on_one_file_agree_on_the_latest_session(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    a, b = SQLiteSessionStore(path), SQLiteSessionStore(path)
    try:
        await a.save("dev-1", "aaaaaaaaaaaa", HISTORY)
        await b.save("dev-1", "bbbbbbbbbbbb", HISTORY)
        await a.save("dev-1", "cccccccccccc", HISTORY)
        await asyncio.gather(*(b.save("dev-1", f"{i:012x}", HISTORY) for i in range(5)))
        ids_a = [r.session_id for r in await a.list("dev-1")]
        ids_b = [r.session_id for r in await b.list("dev-1")]
    finally:
        await a.close()
        await b.close()
    assert ids_a == ids_b
    assert ids_a[5:] == ["cccccccccccc", "bbbbbbbbbbbb", "aaaaaaaaaaaa"]


async def test_another_applications_database_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    store = SQLiteSessionStore(path)
    with pytest.raises(MemoryConnectionError, match="another application"):
        await store.save("dev-1", SID, HISTORY)
    await store.close()
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"users"}


async def test_a_file_that_is_not_sqlite_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes, not a database\n")
    store = SQLiteSessionStore(path)
    with pytest.raises(MemoryConnectionError, match="not a SQLite database"):
        await store.list("dev-1")
    await store.close()
    assert path.read_text() == "my notes, not a database\n"


async def test_an_unreadable_stored_history_is_a_retrieval_error(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteSessionStore(path)
    await store.save("dev-1", SID, HISTORY)
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE sessions SET messages = \'[{"role": "robot"}]\'')
    try:
        with pytest.raises(MemoryRetrievalError, match="unreadable message history"):
            await store.get("dev-1", SID)
    finally:
        await store.close()


async def test_opening_recovers_once_the_path_becomes_usable(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    path.mkdir()
    store = SQLiteSessionStore(path)
    with pytest.raises(MemoryConnectionError, match="is a directory"):
        await store.save("dev-1", SID, HISTORY)
    path.rmdir()
    try:
        await store.save("dev-1", SID, HISTORY)
        assert await store.get("dev-1", SID) is not None
    finally:
        await store.close()
