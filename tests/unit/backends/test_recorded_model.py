"""``recorded_model(url)``: which embedding model a store was built with, read without writing.

Real stores of every persistent kind (SQLite file, PostgreSQL schema, local Qdrant, mem0), filled
through ``Memory`` with a small hashing embedder, then asked again; new and empty stores answer
None and are not created by the question.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memvault import Memory
from memvault.backends.recorded_model import recorded_model
from memvault.config import MemvaultConfig
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConfigError, MemoryConnectionError

MODEL = HashingEmbedder(64).model_id  # "hashing-v1-64"


def _fill(url: str, *, config: MemvaultConfig | None = None) -> None:
    with Memory(url, embedder=HashingEmbedder(64), config=config or MemvaultConfig()) as mem:
        mem.add("The build server runs Debian 12.", agent_id="a")


def test_memory_url_records_nothing() -> None:
    assert recorded_model("memory://") is None


def test_sqlite_missing_file_is_none_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    assert recorded_model(str(db)) is None
    assert recorded_model(f"sqlite:///{db}") is None
    assert not db.exists()


def test_sqlite_records_the_model_and_is_read_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _fill(str(db))
    before = db.stat().st_mtime_ns, db.read_bytes()
    assert recorded_model(str(db)) == MODEL
    assert recorded_model(f"sqlite:///{db}") == MODEL
    assert (db.stat().st_mtime_ns, db.read_bytes()) == before


def test_sqlite_empty_store_and_foreign_file_are_none(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    with Memory(str(db), embedder=HashingEmbedder(64), config=MemvaultConfig()) as mem:
        mem.stats()  # opens (creates) the store, writes no memory
    assert db.exists()
    assert recorded_model(str(db)) is None
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    assert recorded_model(str(other)) is None


def test_sqlite_unreadable_file_raises(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(MemoryConnectionError):
        recorded_model(str(junk))


def test_postgres(postgres_url: str, schemas: Callable[[], str]) -> None:
    schema = schemas()
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}"
    assert recorded_model(url) is None  # schema does not exist: nothing is created
    _fill(url)
    assert recorded_model(url) == MODEL
    other = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schemas()}"
    assert recorded_model(other) is None


def test_postgres_unreachable_raises() -> None:
    with pytest.raises(MemoryConnectionError):
        recorded_model("postgresql://nobody@127.0.0.1:1/none")


def test_qdrant_local(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    where = tmp_path / "q"
    assert recorded_model(f"qdrant://{where}") is None
    assert not where.exists()
    _fill(f"qdrant://{where}")
    assert recorded_model(f"qdrant://{where}") == MODEL
    assert recorded_model(f"qdrant://{where}?collection=other") is None


def test_mem0_local(tmp_path: Path) -> None:
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    where = tmp_path / "m0"
    assert recorded_model(f"mem0://{where}") is None
    assert not where.exists()
    _fill(f"mem0://{where}")
    assert recorded_model(f"mem0://{where}") == MODEL


def test_composite_asks_its_children(tmp_path: Path) -> None:
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    _fill(str(one))
    cfg = MemvaultConfig.model_validate(
        {
            "backend": "composite",
            "composite": {"default": str(one), "routes": {"episodic": str(two)}},
        }
    )
    assert recorded_model("composite://", config=cfg) == MODEL


def test_bad_url_raises() -> None:
    with pytest.raises(MemoryConfigError):
        recorded_model("ftp://somewhere")
