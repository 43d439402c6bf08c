"""SQLite-specific behaviour: the file, migrations, model tracking, other processes, atomicity."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memvault import AsyncMemory
from memvault.backends.factory import create_memory_backend, open_backend
from memvault.backends.sqlite import SQLiteBackend
from memvault.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from memvault.config import MemoryStorageConfig, MemvaultConfig
from memvault.embeddings import HashingEmbedder
from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryStoreError,
)
from memvault.models import MemoryLevel, MemoryMetadata, MemoryQuery, MemoryStoreRequest
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
    ("setup", "error", "expected"),
    [
        (
            lambda p: p.write_bytes(b"this is not a database at all" * 100),
            MemoryConfigError,
            "not a SQLite database",
        ),
        (lambda p: p.mkdir(), MemoryConnectionError, "directory"),
    ],
)
async def test_unusable_paths_raise_naming_the_path(
    tmp_path: Path, setup: object, error: type[Exception], expected: str
) -> None:
    path = tmp_path / "target.db"
    setup(path)  # type: ignore[operator]
    with pytest.raises(error, match=expected) as info:
        await SQLiteBackend(path, HashingEmbedder()).connect()
    assert str(path) in str(info.value)


# -- paths that are surely wrong are refused, not turned into new stores -------------------------


async def test_a_missing_directory_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "memvault.db"
    with pytest.raises(MemoryConfigError, match="does not exist") as info:
        await SQLiteBackend(path, HashingEmbedder()).connect()
    assert str(tmp_path / "typo") in str(info.value)
    assert not (tmp_path / "typo").exists()
    b = SQLiteBackend(path, HashingEmbedder(), create_dirs=True)
    await b.connect()
    await b.disconnect()
    assert path.is_file()


async def test_a_text_file_is_left_untouched(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# my project\n\nNot a database.\n" * 20)
    before = readme.read_bytes()
    with pytest.raises(MemoryConfigError, match="not a SQLite database"):
        await SQLiteBackend(readme, HashingEmbedder()).connect()
    assert readme.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


def test_factory_refuses_wrong_paths_but_creates_memvault_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    embedder = HashingEmbedder()
    for empty in ("", "   "):
        with pytest.raises(MemoryConfigError, match="empty storage URL"):
            open_backend(empty, embedder=embedder)

    async def opens(store: object) -> None:
        assert isinstance(store, SQLiteBackend)
        await store.connect()
        await store.disconnect()

    # The default stores (and a tenant's file beside them) create memvault's own directories.
    persistent = MemvaultConfig(level=MemoryLevel.PERSISTENT)  # the default level is session
    default = create_memory_backend(persistent, embedder=embedder)
    asyncio.run(opens(default))
    assert (tmp_path / "home" / ".memvault" / "memvault.db").is_file()
    project = MemvaultConfig(level=MemoryLevel.PROJECT)
    asyncio.run(opens(create_memory_backend(project, embedder=embedder, tenant="acme")))
    assert (tmp_path / ".memvault" / "memvault.acme.db").is_file()
    data_dir = MemvaultConfig(storage=MemoryStorageConfig(data_dir=str(tmp_path / "data")))
    asyncio.run(opens(create_memory_backend(data_dir, embedder=embedder)))
    assert (tmp_path / "data" / "memvault.db").is_file()
    # A path the caller typed, in a directory that does not exist, is refused.
    typo = open_backend(str(tmp_path / "tpyo" / "m.db"), embedder=embedder)
    with pytest.raises(MemoryConfigError, match="does not exist"):
        asyncio.run(opens(typo))
    explicit = MemvaultConfig(storage=MemoryStorageConfig(url=f"sqlite:///{tmp_path}/no/m.db"))
    with pytest.raises(MemoryConfigError, match="does not exist"):
        asyncio.run(opens(create_memory_backend(explicit, embedder=embedder)))
    assert not (tmp_path / "tpyo").exists()
    assert not (tmp_path / "no").exists()


async def test_memory_facade_refuses_wrong_paths(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# notes\n")
    for target, expected in (
        (tmp_path / "missing" / "m.db", "does not exist"),
        (readme, "not a SQLite database"),
    ):
        mem = AsyncMemory(str(target), embedder=HashingEmbedder())
        try:
            with pytest.raises(MemoryConfigError, match=expected):
                await mem.add("hello", agent_id="a")
        finally:
            await mem.close()
    assert readme.read_text() == "# notes\n"
    assert not (tmp_path / "missing").exists()


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


# -- metadata filters: migration m006 and the scope-key indexes -----------------------------------


async def test_m006_repairs_non_json_metadata_and_indexes_the_scope_keys(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    nan = await b.store("a", req("written with NaN by an older version"))
    broken = await b.store("a", req("written with garbage"))
    fine = await b.store(
        "a",
        MemoryStoreRequest(content="fine", metadata=MemoryMetadata(extra={"user_id": "u1"})),
    )
    await b.disconnect()
    # Roll the store back to before m006, with what older versions could leave in ``extra``.
    conn = sqlite3.connect(path)
    try:
        conn.execute("DELETE FROM schema_migrations WHERE name = 'm006_metadata_filters'")
        for key in ("user_id", "session_id", "run_id", "namespace"):
            conn.execute(f"DROP INDEX idx_memories_agent_{key}")
        conn.execute(
            "UPDATE memories SET extra = ? WHERE id = ?",
            ('{"score": NaN, "user_id": "u1", "worst": -Infinity}', nan),
        )
        conn.execute("UPDATE memories SET extra = ? WHERE id = ?", ('{"oops": ', broken))
        conn.commit()
    finally:
        conn.close()
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    try:
        repaired = await b.get("a", nan)
        assert repaired is not None
        assert repaired.metadata.extra == {"score": None, "user_id": "u1", "worst": None}
        kept = await b.get("a", broken)
        assert kept is not None and kept.metadata.extra == {"invalid_metadata": '{"oops": '}
        q = MemoryQuery(limit=10, filters={"user_id": "u1"})
        assert {e.id for e in await b.list_entries("a", q)} == {nan, fine}
    finally:
        await b.disconnect()
    conn = sqlite3.connect(path)
    try:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"idx_memories_agent_user_id", "idx_memories_agent_namespace"} <= indexes
        assert (
            conn.execute("SELECT COUNT(*) FROM memories WHERE json_valid(extra) = 0").fetchone()[0]
            == 0
        )
    finally:
        conn.close()


async def test_scope_key_filters_use_the_expression_index(tmp_path: Path) -> None:
    from memvault.backends.sqlite._rows import _filters_sql, _where

    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    await b.disconnect()
    conn = sqlite3.connect(path)
    try:
        for key in ("user_id", "session_id", "run_id", "namespace"):
            where, params = _where(MemoryQuery(filters={key: "x"}), 0)
            plan = " ".join(
                r[3]
                for r in conn.execute(
                    "EXPLAIN QUERY PLAN SELECT m.rowid FROM memories m"
                    f" WHERE m.agent_id = ? AND m.scope = 'private' AND {where}",
                    ["a", *params],
                )
            )
            assert f"idx_memories_agent_{key}" in plan, plan
        cond, params = _filters_sql(MemoryQuery(filters={"user_id": "x"}).filters)
        plan = " ".join(
            r[3]
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM memories m"
                f" WHERE m.agent_id = ? AND {cond}",
                ["a", *params],
            )
        )
        assert "idx_memories_agent_user_id" in plan, plan
    finally:
        conn.close()


async def test_stored_metadata_is_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    b = SQLiteBackend(path, HashingEmbedder(dimension=64))
    await b.connect()
    try:
        meta = MemoryMetadata(extra={"z": [1, (2, 3)], "a": {"b": None}})
        mid = await b.store("a", MemoryStoreRequest(content="x", metadata=meta))
    finally:
        await b.disconnect()
    conn = sqlite3.connect(path)
    try:
        text = conn.execute("SELECT extra FROM memories WHERE id = ?", (mid,)).fetchone()[0]
    finally:
        conn.close()
    assert text == '{"a": {"b": null}, "z": [1, [2, 3]]}'
    assert json.loads(text) == {"a": {"b": None}, "z": [1, [2, 3]]}


async def test_candidates_carry_the_analysed_content_of_every_entry(tmp_path: Path) -> None:
    """Ranking reads candidates' terms from ``CandidateSet.analysed`` instead of analysing
    their text again: it must be exactly ``index_text(content)``, read from the full-text index
    on the first search and from the entry cache after."""
    from datetime import UTC, datetime

    from memvault.retrieval.text import index_text

    b = SQLiteBackend(tmp_path / "m.db", HashingEmbedder(dimension=64))
    await b.connect()
    try:
        may = datetime(2023, 5, 8, tzinfo=UTC)
        texts = [
            "Zebra stripes are unique to each animal.",
            "We saw zebras in May 2023",  # ends with its own month and year
            "the of and",  # stop words only: no terms
            "Running zebras ran 5 km; café naïve",
        ]
        for text in texts:
            await b.store(
                "a",
                MemoryStoreRequest(
                    content=text, created_at=may, metadata=MemoryMetadata(extra={"session": "s"})
                ),
            )
        await b.store("b", req("zebra of another agent"))
        query = MemoryQuery(text="zebra stripes")
        for _ in range(2):
            cands = await b.search_candidates("a", query, pool=10, neighbours=2, hops=2)
            assert set(cands.analysed) == set(cands.entries) and len(cands.entries) == 4
            for entry_id, entry in cands.entries.items():
                assert cands.analysed[entry_id] == index_text(entry.content)
        # A lexical-only query, and one with no text, hand over only what they have.
        cands = await b.search_candidates("a", query, pool=10, dense=False)
        assert set(cands.analysed) == set(cands.entries)
    finally:
        await b.disconnect()


STATIC_TURNS = [
    "Alice: I made spaghetti carbonara for my friend Sam on Friday night.",
    "Bob: The staging database lives in eu-west-1 and is backed up hourly.",
    "Alice: My sister finally visited; we hiked up to the old lighthouse.",
    "Bob: The quarterly budget review moved to the second week of March.",
    "Alice: I planted tomatoes and basil in the balcony garden.",
]
STATIC_QUERIES = ["What did Alice cook for her friend?", "Where is the staging database?"]


async def _ranked(path: Path, minilm: Embedder) -> list[list[tuple[str, float]]]:
    async with AsyncMemory(str(path), embedder=minilm, track_access=False) as mem:
        out = []
        for q in STATIC_QUERIES:
            hits = await mem.search(q, agent_id="a", limit=5)
            out.append([(h.id, round(h.relevance_score or 0.0, 6)) for h in hits])
        return out


async def test_static_vectors_are_stored_and_a_store_without_them_ranks_the_same(
    tmp_path: Path, minilm: Embedder
) -> None:
    from memvault.retrieval.evidence import static_vectors

    path = tmp_path / "s.db"
    async with AsyncMemory(str(path), embedder=minilm, track_access=False) as mem:
        await mem.add_many([{"content": t} for t in STATIC_TURNS], agent_id="a", dedup=False)
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT m.content, s.vector FROM memories m"
            " JOIN memory_static s ON s.memory_rowid = m.rowid ORDER BY m.rowid"
        ).fetchall()
    finally:
        conn.close()
    # One float16 vector per memory, exactly what ranking computes from the content.
    assert [content for content, _ in rows] == STATIC_TURNS
    expected = static_vectors(STATIC_TURNS)
    for (_, blob), vec in zip(rows, expected, strict=True):
        assert blob == np.ascontiguousarray(vec, dtype="<f2").tobytes()
    stored = await _ranked(path, minilm)
    assert stored[0][0][1] > 0 and len(stored[0]) == len(STATIC_TURNS)

    # A single add stores one too, and deleting a memory deletes its static vector with it.
    def count() -> int:
        conn = sqlite3.connect(path)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM memory_static").fetchone()[0])
        finally:
            conn.close()

    async with AsyncMemory(str(path), embedder=minilm, track_access=False) as mem:
        gone = await mem.add("A memory that is about to go.", agent_id="a", dedup=False)
        assert count() == len(rows) + 1
        await mem.delete(gone, agent_id="a")
    assert count() == len(rows)

    # A store written before the table existed: its migration adds the table, ranking computes
    # the vectors it lacks, and the results are the same, scores included.
    conn = sqlite3.connect(path)
    try:
        conn.execute("DROP TABLE memory_static")
        conn.execute("DELETE FROM schema_migrations WHERE name = 'm008_static_vectors'")
        conn.commit()
    finally:
        conn.close()
    # Other ids than the first run's would hit ranking's memo; this proves nothing by itself,
    # so the memo is emptied to make the second ranking compute every vector.
    from memvault.retrieval import evidence

    evidence._profiles.clear()
    assert await _ranked(path, minilm) == stored
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM memory_static").fetchone()[0] == 0
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
        assert "m008_static_vectors" in names
    finally:
        conn.close()
