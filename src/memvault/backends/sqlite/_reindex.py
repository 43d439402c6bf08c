"""Re-embedding the SQLite store with another model: the backend side of ``memvault reindex``.

New vectors are staged in ``reindex_vectors`` (one row per memory and target model, created on
demand, never part of the schema proper), a batch per transaction, so an interrupted run keeps
what it staged. The stored vectors change only in :meth:`SQLiteReindexMixin.reindex_swap`: one
``BEGIN IMMEDIATE`` transaction embeds whatever memory still lacks a staged vector (written
since the last batch), copies every staged vector over ``memory_vectors``, records the new model
id and dimension in ``store_meta``, bumps the generation and drops the staging table. A crash at
any point leaves either the old vectors and model or the new ones.

The in-process matrices, their lexical postings and the HNSW graph files beside the database are
derived data: the swap drops the matrices (they reload with the new vectors) and deletes the
graph directory (graphs are rebuilt on demand; a graph saved late by another process is
reconciled or rebuilt on load, see :mod:`._ann`). Other processes see the generation change and
refuse to go on with the old model (:meth:`SQLiteBackend._check_model`).

This is :class:`SQLiteReindexMixin`, mixed into :class:`~memvault.backends.sqlite.SQLiteBackend`.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from memvault.backends._base import BaseBackend, Vectors, embedding_text
from memvault.backends.sqlite._rows import _COLUMNS, _PAGE, _EntryCache, _row_entry
from memvault.backends.sqlite.vector_index import AgentIndex
from memvault.errors import EmbeddingModelChangedError, MemoryStoreError
from memvault.protocols import Embedder

__all__ = ["SQLiteReindexMixin"]

logger = logging.getLogger("memvault.backends.sqlite.backend")

T = TypeVar("T")

if TYPE_CHECKING:
    _MixinBase = BaseBackend
else:
    _MixinBase = object

_STAGING_DDL = (
    "CREATE TABLE IF NOT EXISTS reindex_vectors ("
    " memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,"
    " model        TEXT NOT NULL,"
    " vector       BLOB NOT NULL,"
    " PRIMARY KEY (memory_rowid, model)"
    ") WITHOUT ROWID"
)

_MISSING = (
    f"SELECT {_COLUMNS} FROM memories m WHERE NOT EXISTS (SELECT 1 FROM reindex_vectors r"
    " WHERE r.memory_rowid = m.rowid AND r.model = ?) ORDER BY m.rowid"
)

_MISSING_AFTER = (
    f"SELECT {_COLUMNS} FROM memories m WHERE NOT EXISTS (SELECT 1 FROM reindex_vectors r"
    " WHERE r.memory_rowid = m.rowid AND r.model = ?) AND m.rowid > {bound} ORDER BY m.rowid"
)


def _blob(vector: Any) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


class SQLiteReindexMixin(_MixinBase):
    """Staging, resuming and swapping in new vectors (see the module docstring)."""

    if TYPE_CHECKING:
        # Provided by SQLiteBackend (memvault.backends.sqlite.backend).
        _path: Path
        _cache: _EntryCache
        _indexes: dict[str, AgentIndex]
        _generation: int

        async def _run(self, fn: Callable[..., T], *args: Any, write: bool = False) -> T: ...

        @property
        def _db(self) -> sqlite3.Connection: ...

        def _transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        def _bump_generation(self, conn: sqlite3.Connection) -> None: ...

        def _refresh(self) -> None: ...

    def _has_staging(self) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reindex_vectors'"
        ).fetchone()
        return row is not None

    async def reindex_status(self, model_id: str) -> tuple[int, int]:
        """``(memories, memories with a staged vector of model_id)``; writes nothing."""
        self._require_connected()

        def run() -> tuple[int, int]:
            total = int(self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
            if not self._has_staging():
                return total, 0
            staged = self._db.execute(
                "SELECT COUNT(*) FROM reindex_vectors WHERE model = ?", (model_id,)
            ).fetchone()[0]
            return total, int(staged)

        return await self._run(run)

    async def reindex_begin(self, model_id: str) -> None:
        """Create the staging table; keep what is staged for ``model_id``, drop the rest."""
        self._require_connected()

        def run() -> None:
            with self._transaction() as conn:
                conn.execute(_STAGING_DDL)
                # Vectors of another target model are an abandoned run's: they never get used.
                conn.execute("DELETE FROM reindex_vectors WHERE model <> ?", (model_id,))

        await self._run(run, write=True)

    async def reindex_pending(
        self, model_id: str, limit: int, *, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Up to ``limit`` memories (id, text to embed) with no staged vector, by rowid (after
        the rowid of memory ``after``)."""
        self._require_connected()

        def run() -> list[tuple[str, str]]:
            # A missing `after` row makes the bound NULL: an empty page, and the engine starts
            # over from the beginning.
            bound = "(SELECT rowid FROM memories WHERE id = ?)" if after is not None else "0"
            params: list[Any] = [] if after is None else [after]
            if not self._has_staging():
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid > {bound}"
                    " ORDER BY m.rowid LIMIT ?",
                    [*params, limit],
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"{_MISSING_AFTER.format(bound=bound)} LIMIT ?", [model_id, *params, limit]
                ).fetchall()
            entries = [_row_entry(r) for r in rows]
            return [(e.id, embedding_text(e)) for e in entries]

        return await self._run(run)

    async def reindex_stage(self, model_id: str, vectors: Mapping[str, Vectors]) -> int:
        """Stage vectors by memory id in one transaction; ids gone meanwhile are skipped."""
        self._require_connected()
        items = [(mid, _blob(v)) for mid, v in vectors.items()]

        def run() -> int:
            staged = 0
            with self._transaction() as conn:
                for mid, blob in items:
                    # INSERT ... SELECT: a memory deleted since it was read stages nothing.
                    cur = conn.execute(
                        "INSERT OR REPLACE INTO reindex_vectors (memory_rowid, model, vector)"
                        " SELECT rowid, ?, ? FROM memories WHERE id = ?",
                        (model_id, blob, mid),
                    )
                    staged += cur.rowcount
            return staged

        return await self._run(run, write=True)

    async def reindex_swap(self, embedder: Embedder, embed: Callable[[list[str]], Vectors]) -> int:
        """Swap the staged vectors in, in one transaction (see the module docstring)."""
        self._require_connected()
        model, dim = embedder.model_id, embedder.dimension

        def run() -> int:
            self._refresh()
            with self._transaction() as conn:
                conn.execute(_STAGING_DDL)
                # Memories written since the last batch (by this or another process) are
                # embedded here, under the write lock, so none is left with an old vector.
                filled = 0
                while rows := conn.execute(f"{_MISSING} LIMIT ?", (model, _PAGE)).fetchall():
                    entries = [_row_entry(r) for r in rows]
                    matrix = embed([embedding_text(e) for e in entries])
                    conn.executemany(
                        "INSERT INTO reindex_vectors (memory_rowid, model, vector) VALUES (?,?,?)",
                        [(r[0], model, _blob(matrix[i])) for i, r in enumerate(rows)],
                    )
                    filled += len(rows)
                conn.execute(
                    "UPDATE memory_vectors SET vector = r.vector FROM reindex_vectors r"
                    " WHERE r.memory_rowid = memory_vectors.memory_rowid AND r.model = ?",
                    (model,),
                )
                stale = conn.execute(
                    "SELECT COUNT(*) FROM memory_vectors WHERE length(vector) <> ?", (4 * dim,)
                ).fetchone()[0]
                if stale:  # pragma: no cover - every memory was staged above
                    msg = f"reindex of {self._path}: {stale} vectors were not replaced"
                    raise MemoryStoreError(msg)
                conn.executemany(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [("embedding_model", model), ("dimension", str(dim))],
                )
                self._bump_generation(conn)
                conn.execute("DROP TABLE reindex_vectors")
            self._generation += 1
            self._embedder = embedder
            # Derived data of the old vectors: matrices (with their postings) reload on demand;
            # they are dropped without saving their HNSW graphs, whose files go too.
            self._indexes.clear()
            self._cache.clear()
            return filled

        filled = await self._run(run, write=True)
        self._drop_ann_files()
        logger.info(
            "memory.reindex.swap",
            extra={"path": str(self._path), "model": model, "dimension": dim, "filled": filled},
        )
        return filled

    def _drop_ann_files(self) -> None:
        """Delete the HNSW graphs beside the file (best effort: stale graphs are rebuilt)."""
        directory = self._path.with_name(self._path.name + ".ann")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(directory)

    def _check_model(self, conn: sqlite3.Connection) -> None:
        """Refuse to go on if another process swapped in another embedding model."""
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_model'").fetchone()
        model = self._embedder.model_id
        if row is not None and row[0] != model:
            msg = (
                f"store {self._path} now holds vectors of embedding model {row[0]!r}, not of "
                f"{model!r} this process opened it with (it was reindexed meanwhile): reopen "
                "it with the new model"
            )
            raise EmbeddingModelChangedError(msg, stored_model=str(row[0]), configured_model=model)
