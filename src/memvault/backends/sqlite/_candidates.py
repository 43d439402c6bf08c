"""Search in the SQLite store: the in-process vector matrices and candidate retrieval.

Dense candidates come from per-scope float32 matrices held in process (one per agent, one for
shared knowledge), lexical ones from FTS5's ``bm25()``; both pass the query's filters. The
change tracking that tells when those matrices (and the entry cache) are stale lives here too:
``PRAGMA data_version`` and the ``generation`` counter in ``store_meta``. This is
:class:`SQLiteCandidatesMixin`, mixed into :class:`~memvault.backends.sqlite.SQLiteBackend`,
which owns the connection; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from memvault.backends._base import BaseBackend, Vectors
from memvault.backends._common import analysed_content
from memvault.backends.sqlite._blas import single_threaded
from memvault.backends.sqlite._rows import (
    _CATEGORY_CODE,
    _COLUMNS,
    _PAGE,
    _EntryCache,
    _index_key,
    _row_entry,
    _scope_sql,
    _where,
    to_us,
)
from memvault.backends.sqlite.lexical_index import fts_token, parse_fts_averages
from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexColumns
from memvault.models import CandidateSet, MemoryEntry, MemoryQuery
from memvault.retrieval.bm25 import idf, prune_common_terms
from memvault.retrieval.static import STATIC_DIMENSION
from memvault.retrieval.threads import neighbour_anchors

__all__ = ["SQLiteCandidatesMixin"]

# The log records keep the logger name they had before this module was split out of backend.
logger = logging.getLogger("memvault.backends.sqlite.backend")

T = TypeVar("T")

if TYPE_CHECKING:
    from memvault.backends.sqlite._ann import AnnSettings

    _MixinBase = BaseBackend
else:
    _MixinBase = object


class SQLiteCandidatesMixin(_MixinBase):
    """Vector matrices, change tracking and candidate search of the SQLite backend."""

    if TYPE_CHECKING:
        # Provided by SQLiteBackend (memvault.backends.sqlite.backend).
        _path: Path
        _cache: _EntryCache
        _indexes: dict[str, AgentIndex]
        _data_version: int
        _generation: int
        _doc_freq: dict[str, int]
        _doc_freq_generation: int
        _ann_settings: AnnSettings | None
        _load_chunk: int

        async def _run(self, fn: Callable[..., T], *args: Any, write: bool = False) -> T: ...

        @property
        def _db(self) -> sqlite3.Connection: ...

        def _check_model(self, conn: sqlite3.Connection) -> None: ...

    # -- change tracking ------------------------------------------------------------------------

    @staticmethod
    def _read_generation(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )

    def _refresh(self) -> None:
        """Drop cached matrices if another process changed the store since we last looked."""
        conn = self._db
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        generation = self._read_generation(conn)
        if generation != self._generation:
            # A `memvault reindex` swap bumps the generation too: refuse (before noting the
            # version, so every later call refuses as well) to go on with the old model.
            self._check_model(conn)
            self._generation = generation
            if self._indexes:
                logger.debug("memory.sqlite.refresh", extra={"path": str(self._path)})
            self._indexes.clear()
            self._cache.clear()
        self._data_version = version

    def _index_for(self, agent_id: str) -> AgentIndex:
        """The vector matrix of an agent's private memories, or of shared knowledge (SHARED_KEY)."""
        index = self._indexes.get(agent_id)
        if index is not None:
            return index
        scope, scope_params = _scope_sql(agent_id)
        conn = self._db
        count = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {scope}", scope_params)
        index = AgentIndex(
            self._embedder.dimension, capacity=int(count.fetchone()[0]), ann=self._ann_settings
        )
        cursor = conn.execute(
            "SELECT m.rowid, m.category, m.created_at, COALESCE(m.valid_from, m.created_at),"
            " m.valid_to, m.expires_at, m.superseded_by IS NOT NULL, v.vector, f.c0"
            " FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid"
            # FTS5 keeps each row's text in its content table (column c0 = body), keyed by
            # rowid: read there, a join costs a b-tree lookup, through the virtual table
            # about as much again as the rest of this load.
            " LEFT JOIN memories_fts_content f ON f.id = m.rowid"
            f" WHERE {scope} ORDER BY m.rowid",
            scope_params,
        )
        # A chunk at a time: a million rows fetched at once would hold their vector blobs
        # twice over (as rows, then joined) beside the matrix.
        bodies: list[str] = []
        while chunk := cursor.fetchmany(self._load_chunk):
            index.load_columns(_index_columns(chunk), _vectors_of(chunk, index.dim))
            bodies.extend(r[8] or "" for r in chunk)
        index.lexical.add(bodies)
        # Large agents also get an HNSW graph beside the file (derived data, see _ann).
        index.enable_ann(self._path, agent_id)
        self._indexes[agent_id] = index
        return index

    # -- candidates -----------------------------------------------------------------------------

    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return await self._run(self._candidates_sync, agent_id, query, vector, terms, pool, now)

    async def _candidates_near(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
        neighbours: int,
        hops: int,
    ) -> CandidateSet:
        # One trip to the store's thread for candidates and their neighbours.
        return await self._run(
            self._candidates_sync, agent_id, query, vector, terms, pool, now, None, neighbours, hops
        )

    def _candidates_sync(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
        exclude_agent: str | None = None,
        neighbours: int = 0,
        hops: int = 0,
    ) -> CandidateSet:
        """Candidates among the agent's private entries, or shared ones if ``agent_id`` is
        ``SHARED_KEY`` (minus ``exclude_agent``'s)."""
        self._refresh()
        conn = self._db
        lexical_terms, idfs, avgdl = self._lexical_stats(terms)
        if vector is None and not lexical_terms:
            return CandidateSet(query_vector=vector)
        now_us = to_us(now)
        index = self._index_for(agent_id)
        allowed = None
        # Filters the matrix has no column for are answered in SQL first, so the top ``pool``
        # is taken among the rows that pass them (a selective filter keeps recall).
        if query.tags or query.label is not None or query.filters:
            where, params = _where(query, now_us)
            scope, scope_params = _scope_sql(agent_id, exclude_agent)
            rows = conn.execute(
                f"SELECT m.rowid FROM memories m WHERE {scope} AND {where}",
                [*scope_params, *params],
            ).fetchall()
            allowed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        mask = index.mask(
            now_us=now_us,
            categories=None
            if query.categories is None
            else [_CATEGORY_CODE[c] for c in query.categories],
            since_us=None if query.since is None else to_us(query.since),
            until_us=None if query.until is None else to_us(query.until),
            as_of_us=None if query.as_of is None else to_us(query.as_of),
            include_superseded=query.include_superseded,
            allowed_rowids=allowed,
        )
        if exclude_agent is not None and allowed is None:
            # The shared matrix holds every author; mask out the excluded one's rows.
            excluded = conn.execute(
                "SELECT rowid FROM memories WHERE agent_id = ? AND scope = 'shared'",
                (exclude_agent,),
            ).fetchall()
            if excluded:
                gone = np.fromiter((r[0] for r in excluded), dtype=np.int64)
                mask &= ~np.isin(index.rowids[: index.n], gone)
        dense: list[tuple[int, float]] = []
        if vector is not None:
            # One BLAS thread: the product is memory-bound, and idle OpenBLAS workers spin on
            # the cores the embedder and other requests need (see ._blas).
            with single_threaded():
                dense = index.search(vector, mask, pool)
        lexical: list[tuple[int, float]] = []
        if lexical_terms:
            lexical = index.lexical.search(
                lexical_terms, idfs, avgdl, mask, index.rowids[: index.n], pool
            )
        by_rowid = self._load_rows({r for r, _ in dense} | {r for r, _ in lexical})
        searched = None if vector is None else int(np.count_nonzero(mask))
        cands = CandidateSet(query_vector=vector, searched=searched)
        cands.dense = [(by_rowid[r].id, s) for r, s in dense if r in by_rowid]
        cands.lexical = [(by_rowid[r].id, s) for r, s in lexical if r in by_rowid]
        cands.entries = {e.id: e for e in by_rowid.values()}
        if vector is not None:
            for rowid, entry in by_rowid.items():
                vec = index.vector(rowid, copy=False)
                if vec is not None:
                    cands.vectors[entry.id] = vec
        loaded = by_rowid
        if neighbours > 0 and hops > 0 and (cands.lexical or cands.dense):
            top = neighbour_anchors(cands, neighbours)
            rowid_of = {e.id: r for r, e in by_rowid.items()}
            sides = {i: index.adjacent(rowid_of[i], hops) for i in top if i in rowid_of}
            near = self._load_rows({r for b, a in sides.values() for r in (*b, *a)})
            adjacent = {
                i: ([near[r] for r in b if r in near], [near[r] for r in a if r in near])
                for i, (b, a) in sides.items()
            }
            self._attach_neighbours(query, cands, top, adjacent)
            loaded = {**by_rowid, **near}
        kept = {r: e for r, e in loaded.items() if e.id in cands.entries}
        cands.analysed = self._analysed(kept)
        if vector is not None:
            cands.static = self._static(kept)
        return cands

    def _static(self, rows: dict[int, MemoryEntry]) -> dict[str, bytes]:
        """The stored static vectors of ``rows`` (``CandidateSet.static``, as the float16 bytes
        stored: ranking converts them in one step), from the entry cache or else from
        ``memory_static``; rows stored without one are left to ranking."""

        def blob(_entry: MemoryEntry, value: object) -> bytes | None:
            if isinstance(value, bytes) and len(value) == 2 * STATIC_DIMENSION:
                return value
            return None

        return self._beside_rows(
            rows,
            self._cache.static,
            "SELECT memory_rowid, vector FROM memory_static WHERE memory_rowid IN ({marks})",
            blob,
            self._cache.put_static,
        )

    def _analysed(self, rows: dict[int, MemoryEntry]) -> dict[str, str]:
        """The analysed content of ``rows`` (``CandidateSet.analysed``), from the entry cache or
        else read from the full-text index: a few microseconds a row, where analysing a long
        turn's content again at ranking costs a hundred."""

        def analysed(entry: MemoryEntry, body: object) -> str | None:
            return analysed_content(entry, body) if isinstance(body, str) else None

        # Read from FTS5's content table (c0 = body, keyed by rowid) as _index_for does: through
        # the virtual table the same rows cost about 1.5-2 times as much.
        return self._beside_rows(
            rows,
            self._cache.analysed,
            "SELECT id, c0 FROM memories_fts_content WHERE id IN ({marks})",
            analysed,
            self._cache.put_analysed,
        )

    def _beside_rows(
        self,
        rows: dict[int, MemoryEntry],
        cached: Callable[[int], T | None],
        sql: str,
        convert: Callable[[MemoryEntry, object], T | None],
        keep: Callable[[int, T], None],
    ) -> dict[str, T]:
        """What the store keeps beside each of ``rows``, by entry id: from the entry cache
        (``cached``), else read by rowid a page at a time (``sql`` with ``{marks}`` for the
        placeholders, selecting rowid and value), ``convert``-ed and cached (``keep``)."""
        out: dict[str, T] = {}
        missing: list[int] = []
        for rowid, entry in rows.items():
            found = cached(rowid)
            if found is None:
                missing.append(rowid)
            else:
                out[entry.id] = found
        for start in range(0, len(missing), _PAGE):
            chunk = missing[start : start + _PAGE]
            for rowid, raw in self._db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk):
                entry = rows[rowid]
                value = convert(entry, raw)
                if value is not None:
                    out[entry.id] = value
                    keep(rowid, value)
        return out

    def _lexical_stats(self, terms: list[str]) -> tuple[list[str], list[float], float]:
        """The query terms BM25 scores (common ones pruned), their idfs, and the average row
        length: the statistics FTS5's ``bm25()`` uses, of the whole table (every agent)."""
        if not terms:
            return [], [], 0.0
        conn = self._db
        found = conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
        rows, tokens = parse_fts_averages(bytes(found[0])) if found else (0, 0)
        if rows == 0:
            return [], [], 0.0
        keys = [fts_token(t) for t in terms]
        if self._doc_freq_generation != self._generation:
            self._doc_freq.clear()
            self._doc_freq_generation = self._generation
        cached = self._doc_freq
        missing = [k for k in dict.fromkeys(keys) if k not in cached]
        if missing:
            # fts5vocab counts a term's rows by walking its doclist (about 0.3 ms for a term in
            # a tenth of 100k rows), hence the cache, which this store's own inserts keep exact
            # (note_inserted_terms) and any other write clears.
            marks = ",".join("?" * len(missing))
            stored = dict(
                conn.execute(
                    f"SELECT term, doc FROM memories_fts_vocab WHERE term IN ({marks})", missing
                ).fetchall()
            )
            for k in missing:
                cached[k] = int(stored.get(k, 0))
        freq = {t: cached[k] for t, k in zip(terms, keys, strict=True)}
        kept = prune_common_terms(terms, freq, rows)
        return kept, [idf(rows, freq[t]) for t in kept], tokens / rows

    def _note_inserted_terms(self, bodies: Iterable[str], generation_before: int) -> None:
        """Keep the document-frequency cache exact across this store's own insert.

        Called after the insert committed and bumped the generation. If the cache was current
        before it, each cached term of the new rows gains one document; otherwise the cache is
        stale already and is cleared at its next use.
        """
        if self._doc_freq_generation != generation_before:
            return
        cached = self._doc_freq
        if cached:
            for body in bodies:
                for term in set(body.split()):
                    key = fts_token(term)
                    if key in cached:
                        cached[key] += 1
        self._doc_freq_generation = self._generation

    def _load_rows(self, rowids: Iterable[int]) -> dict[int, MemoryEntry]:
        """Entries by rowid, from the cache where possible, else from one query per page."""
        out: dict[int, MemoryEntry] = {}
        missing: list[int] = []
        for rowid in rowids:
            cached = self._cache.get(rowid)
            if cached is None:
                missing.append(rowid)
            else:
                out[rowid] = cached
        for start in range(0, len(missing), _PAGE):
            chunk = missing[start : start + _PAGE]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid IN ({marks})", chunk
            ):
                entry = _row_entry(row)
                self._cache.put(row[0], entry)
                out[row[0]] = entry
        return out

    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        return await self._run(self._adjacent_sync, agent_id, list(ids), hops)

    def _adjacent_sync(
        self, agent_id: str, ids: list[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        self._refresh()
        index = self._index_for(agent_id)
        marks = ",".join("?" * len(ids))
        # Looked up by id (unique index), then kept if the row is in this matrix: a WHERE on
        # agent/scope lets the planner pick the scope index and scan every private row.
        own = {
            r[0]: r[1]
            for r in self._db.execute(
                "SELECT m.id, m.rowid, m.agent_id, m.scope, m.retracted_at FROM memories m"
                f" WHERE m.id IN ({marks})",
                ids,
            )
            if _index_key(r[2], r[3], r[4]) == agent_id
        }
        sides = {entry_id: index.adjacent(rowid, hops) for entry_id, rowid in own.items()}
        by_rowid = self._load_rows({r for b, a in sides.values() for r in (*b, *a)})
        return {
            entry_id: (
                [by_rowid[r] for r in before if r in by_rowid],
                [by_rowid[r] for r in after if r in by_rowid],
            )
            for entry_id, (before, after) in sides.items()
        }


LOAD_CHUNK = 50_000
"""Rows read per fetch when an agent's index is loaded (``SQLiteBackend(load_chunk=...)``)."""

_CODE_OF_VALUE = {c.value: code for c, code in _CATEGORY_CODE.items()}


def _index_columns(chunk: Sequence[Sequence[Any]]) -> IndexColumns:
    """The index columns of loaded rows (``rowid, category, created, start, valid_to,
    expires, superseded, ...``)."""
    k = len(chunk)
    return IndexColumns(
        rowids=np.fromiter((r[0] for r in chunk), dtype=np.int64, count=k),
        category=np.fromiter((_CODE_OF_VALUE[r[1]] for r in chunk), dtype=np.int8, count=k),
        created=np.fromiter((r[2] for r in chunk), dtype=np.int64, count=k),
        start=np.fromiter((r[3] for r in chunk), dtype=np.int64, count=k),
        valid_to=np.fromiter((NEVER if r[4] is None else r[4] for r in chunk), np.int64, k),
        expires=np.fromiter((NEVER if r[5] is None else r[5] for r in chunk), np.int64, k),
        superseded=np.fromiter((bool(r[6]) for r in chunk), dtype=np.bool_, count=k),
    )


def _vectors_of(chunk: Sequence[Sequence[Any]], dim: int) -> NDArray[np.float32]:
    """The float32 vectors (column 7, little-endian blobs) of loaded rows, one per row."""
    blob = b"".join(r[7] for r in chunk)
    return np.frombuffer(blob, dtype="<f4").reshape(len(chunk), dim)
