"""SQLite-specific behaviour: the file, migrations, model tracking, other processes, atomicity."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memvault.backends.sqlite import SQLiteBackend
from memvault.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from memvault.embeddings import HashingEmbedder
from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryConnectionError,
    MemoryStoreError,
)
from memvault.models import MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder


class RenamedEmbedder:
    """The hashing embedder under another model id (same dimension)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(dimension=64)

    @property
    def model_id(self) -> str:
        return "some-other-model"

    @property
    def dimension(self) -> int:
        return 64

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


def req(text: str) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=text)


async def test_data_survives_reopen(tmp_path: Path, minilm: Embedder) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, minilm)
    await b.connect()
    mid = await b.store("a", req("The staging database lives in eu-west-1"))
    await b.disconnect()
    b2 = SQLiteBackend(path, minilm)
    await b2.connect()
    try:
        got = await b2.get("a", mid)
        assert got is not None and "eu-west-1" in got.content
        hits = await b2.retrieve("a", MemoryQuery(text="where is the staging database?"))
        assert hits[0].id == mid
    finally:
        await b2.disconnect()


async def test_file_is_wal_with_busy_timeout_and_recorded_meta(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    await b.store("a", req("x marks the spot"))
    assert await b.schema_version() == SCHEMA_VERSION
    await b.disconnect()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(conn.execute("SELECT key, value FROM store_meta"))
        assert meta["embedding_model"] == "hashing-v1-64"
        assert meta["dimension"] == "64"
        assert meta["schema_version"] == str(SCHEMA_VERSION)
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == [name for name, _ in MIGRATIONS]
        # The vector is stored as float32 bytes.
        blob = conn.execute("SELECT vector FROM memory_vectors").fetchone()[0]
        assert len(blob) == 64 * 4
    finally:
        conn.close()


async def test_migrations_apply_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    for _ in range(3):
        b = SQLiteBackend(path, HashingEmbedder(dimension=64))
        await b.connect()
        await b.disconnect()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(
            MIGRATIONS
        )
    finally:
        conn.close()


async def test_other_model_same_dimension_raises_model_changed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    await b.store("a", req("hello"))
    await b.disconnect()
    with pytest.raises(EmbeddingModelChangedError) as info:
        await SQLiteBackend(path, RenamedEmbedder()).connect()
    assert not isinstance(info.value, DimensionMismatchError)
    assert info.value.stored_model == "hashing-v1-64"
    assert "reindex" in str(info.value)


async def test_other_dimension_raises_dimension_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    await b.store("a", req("hello"))
    await b.disconnect()
    with pytest.raises(DimensionMismatchError) as info:
        await SQLiteBackend(path, HashingEmbedder(dimension=32)).connect()
    assert (info.value.stored_dimension, info.value.configured_dimension) == (64, 32)


async def test_empty_store_adopts_a_new_model(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    await b.disconnect()
    b2 = SQLiteBackend(path, HashingEmbedder(dimension=32))
    await b2.connect()  # nothing stored yet: no vectors to invalidate
    await b2.disconnect()


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda p: p.write_bytes(b"this is not a database at all" * 100), "not a SQLite database"),
        (lambda p: p.mkdir(), "directory"),
    ],
)
async def test_unusable_paths_raise_connection_error_naming_the_path(
    tmp_path: Path, setup: object, expected: str
) -> None:
    path = tmp_path / "target.db"
    setup(path)  # type: ignore[operator]
    with pytest.raises(MemoryConnectionError, match=expected) as info:
        await SQLiteBackend(path, HashingEmbedder()).connect()
    assert str(path) in str(info.value)


async def test_foreign_sqlite_database_is_not_modified(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    with pytest.raises(MemoryConnectionError, match="another application"):
        await SQLiteBackend(path, HashingEmbedder()).connect()
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"invoices"}


async def test_failed_batch_rolls_back_everything(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    try:
        first = await b.store("a", req("kept memory about apples"))
        await b.retrieve("a", MemoryQuery(text="apples"))  # load the in-process matrix
        # A trigger makes the third insert of the batch fail inside the transaction.
        conn = sqlite3.connect(path)
        conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON memories WHEN NEW.content = 'poison'"
            " BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
        )
        conn.commit()
        conn.close()
        with pytest.raises(MemoryStoreError, match="poisoned"):
            await b.store_many("a", [req("apples one"), req("apples two"), req("poison")])
        assert await b.count("a") == 1
        hits = await b.retrieve("a", MemoryQuery(text="apples", limit=10))
        assert [h.id for h in hits] == [first]
        raw = sqlite3.connect(path)
        try:
            assert raw.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 1
            assert raw.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0] == 1
        finally:
            raw.close()
    finally:
        await b.disconnect()


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from memvault.backends.sqlite import SQLiteBackend
    from memvault.embeddings import HashingEmbedder
    from memvault.models import MemoryStoreRequest

    async def main():
        b = SQLiteBackend(sys.argv[1], HashingEmbedder(dimension=64))
        await b.connect()
        print(await b.store("a", MemoryStoreRequest(content=sys.argv[2])))
        if len(sys.argv) > 3:
            await b.delete("a", sys.argv[3])
        await b.disconnect()

    asyncio.run(main())
    """
)


async def test_writes_of_another_process_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    try:
        mine = await b.store("a", req("zebra stripes are unique"))
        first = await b.retrieve("a", MemoryQuery(text="zebra stripes"))
        assert [h.id for h in first] == [mine]
        out = subprocess.run(
            [sys.executable, "-c", _WRITER, str(path), "zebra herds migrate in summer", mine],
            check=True,
            capture_output=True,
            text=True,
        )
        theirs = out.stdout.strip()
        hits = await b.retrieve("a", MemoryQuery(text="zebra", limit=10))
        assert [h.id for h in hits] == [theirs]
        cands = await b.search_candidates("a", MemoryQuery(text="zebra"), pool=10)
        assert [i for i, _ in cands.dense] == [theirs]
        assert await b.count("a") == 1
    finally:
        await b.disconnect()


async def test_disconnect_is_idempotent_and_reconnect_works(tmp_path: Path) -> None:
    b = SQLiteBackend(tmp_path / "m.db", HashingEmbedder(dimension=64))
    await b.connect()
    await b.connect()
    mid = await b.store("a", req("hello"))
    await b.disconnect()
    await b.disconnect()
    assert not await b.health_check()
    await b.connect()
    assert (await b.get("a", mid)) is not None
    await b.disconnect()
