"""An agent's vectors as one in-process float32 matrix, for exact cosine search.

Exact search over a contiguous matrix is one BLAS matrix-vector product, faster than sqlite-vec
at the sizes an agent has and free of approximation. The matrix is kept transposed
(``dim x capacity``): ``query @ M`` reads memory in the order BLAS streams it, which measured
about twice as fast as ``M @ query`` at 100k rows (the product is memory-bandwidth bound).
The index keeps the columns the filters need (category, times, supersession) beside the
matrix so a query is masked in numpy without touching SQL. Deletions leave tombstones; the
matrix is compacted when a quarter of it is dead.

Large agents (50k rows and more by default, ``MEMVAULT_SQLITE_ANN_MIN_ROWS``; 0 turns it off)
also get an approximate HNSW graph (:mod:`memvault.backends.sqlite._ann`): :meth:`AgentIndex.search`
then asks the graph for unfiltered or mildly filtered queries and re-scores its answer exactly
against the matrix; selective filters, and any query the graph answers with too few surviving
rows, use exact search. The matrix stays the source every result is checked against.

The same rows' stored analysed text is held as postings in :attr:`AgentIndex.lexical`
(:mod:`memvault.backends.sqlite.lexical_index`), by the same positions, so one filter mask
serves the dense and the lexical side.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memvault.backends.sqlite import _ann
from memvault.backends.sqlite.lexical_index import LexicalIndex

__all__ = ["GATHER_BELOW", "NEVER", "AgentIndex", "IndexColumns", "IndexRow"]

logger = logging.getLogger("memvault.backends.sqlite.ann")

_REPLAY_INLINE = 64
"""Writes made during a graph build that a search may replay itself (~0.5 ms each)."""

NEVER = np.iinfo(np.int64).max
"""Timestamp stand-in for "no end" (valid_to / expires_at NULL)."""


GATHER_BELOW = 48
"""A masked search scores only the passing rows when they are at most 1/GATHER_BELOW of the
matrix, else the whole matrix. A column of the transposed matrix is gathered from 384 strided
places, which costs 15-40 times a column of the streamed product (more the larger the matrix):
measured on 2 cores (``bench_ann.py filtered``), gathering 2% of the rows breaks even with the
full product at 100k and 1M rows, and 4% takes 1.4-1.7 times as long. The bar was 1/16 before,
where a filter passing 6% of a large agent's rows made its search twice as slow as no filter."""


@dataclass(frozen=True, slots=True)
class IndexColumns:
    """The values :class:`IndexRow` holds, for many rows, as arrays (see ``load_columns``)."""

    rowids: NDArray[np.int64]
    category: NDArray[np.int8]
    created: NDArray[np.int64]
    start: NDArray[np.int64]
    valid_to: NDArray[np.int64]
    expires: NDArray[np.int64]
    superseded: NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class IndexRow:
    """The per-memory values the index keeps besides the vector."""

    rowid: int
    category: int
    created_us: int
    start_us: int
    valid_to_us: int
    expires_us: int
    superseded: bool


class AgentIndex:
    """Growable matrix of one agent's unit vectors with filter columns.

    ``ann`` are the settings of its HNSW graph (:class:`~._ann.AnnSettings`; default the
    process-wide :data:`._ann.settings`, read when they are needed).
    """

    def __init__(
        self, dim: int, capacity: int = 64, *, ann: _ann.AnnSettings | None = None
    ) -> None:
        self.dim = dim
        self._ann_conf = ann
        self.n = 0
        self.dead = 0
        cap = max(capacity, 16)
        self.matrix: NDArray[np.float32] = np.zeros((dim, cap), dtype=np.float32)
        self.rowids: NDArray[np.int64] = np.zeros(cap, dtype=np.int64)
        self.category: NDArray[np.int8] = np.zeros(cap, dtype=np.int8)
        self.created: NDArray[np.int64] = np.zeros(cap, dtype=np.int64)
        self.start: NDArray[np.int64] = np.zeros(cap, dtype=np.int64)
        self.valid_to: NDArray[np.int64] = np.zeros(cap, dtype=np.int64)
        self.expires: NDArray[np.int64] = np.zeros(cap, dtype=np.int64)
        self.superseded: NDArray[np.bool_] = np.zeros(cap, dtype=np.bool_)
        self.alive: NDArray[np.bool_] = np.zeros(cap, dtype=np.bool_)
        self._pos: dict[int, int] = {}
        self.lexical = LexicalIndex()
        """The same rows' analysed text, by the same positions (BM25 candidates)."""
        self.ann: _ann.AnnGraph | None = None
        self._ann_pending: Future[_ann.AnnGraph] | None = None
        self._ann_target: tuple[Path | None, str] | None = None
        self._ann_log: list[int] | None = None
        """Rowids added or removed while a graph is being loaded/built (replayed on attach)."""
        self._densify_tried = False
        """A denser rebuild was started once (see _maybe_densify): not retried after a failure."""

    # -- approximate search -----------------------------------------------------------------------

    @property
    def ann_settings(self) -> _ann.AnnSettings:
        """The settings this index builds, searches and keeps its graph by."""
        return _ann.settings if self._ann_conf is None else self._ann_conf

    def enable_ann(self, db_path: Path | None, key: str) -> None:
        """Let this index get an HNSW graph (persisted beside ``db_path``) once it is large."""
        self._ann_target = (db_path, key)
        self._maybe_schedule_ann()

    def _maybe_schedule_ann(self) -> None:
        if (
            self._ann_target is None
            or self.ann is not None
            or self._ann_pending is not None
            or self.ann_settings.min_rows <= 0
            or len(self) < self.ann_settings.min_rows
            or not _ann.ann_available()
        ):
            return
        self._schedule_ann(fresh=False)

    def _maybe_densify(self) -> None:
        """Rebuild the graph in the denser shape once the agent has grown past
        ``large_rows`` while this process holds it (in the background: the current graph keeps
        answering, and takes the writes, until the new one is attached). Tried once per index;
        a store reopened later rebuilds a sparse graph it loads anyway."""
        graph = self.ann
        if (
            graph is None
            or self._ann_pending is not None
            or self._ann_target is None
            or self._densify_tried
            or graph.index.connectivity >= _ann.shape_for(len(self), self.ann_settings).connectivity
        ):
            return
        self._densify_tried = True
        self._schedule_ann(fresh=True)

    def _schedule_ann(self, *, fresh: bool) -> None:
        """Load (unless ``fresh``) or build the graph of the live rows, logging the writes made
        meanwhile for replay."""
        assert self._ann_target is not None  # checked by both callers
        live = np.flatnonzero(self.alive[: self.n])
        rowids = self.rowids[live].copy()
        # Columns below ``n`` are never written again (adds append, compaction and growth
        # allocate a new matrix), so the worker thread may gather them from this array later.
        matrix = self.matrix

        def gather(start: int, stop: int) -> NDArray[np.float32]:
            return np.ascontiguousarray(matrix[:, live[start:stop]].T)

        self._ann_log = []
        self._ann_pending = _ann.schedule(
            *self._ann_target, self.dim, rowids, gather, fresh=fresh, conf=self.ann_settings
        )
        if self._ann_pending.done():  # built synchronously (settings.background off)
            self._ann_graph()

    def _ann_graph(self) -> _ann.AnnGraph | None:
        """The graph, attaching a finished background load/build (replaying the writes since)."""
        pending = self._ann_pending
        if pending is not None and pending.done():
            self._ann_pending = None
            log, self._ann_log = self._ann_log, None
            try:
                graph = pending.result()
                # Replay the writes made while the graph was loaded or built: removals first,
                # then the rows still alive (a reused rowid ends with its newest vector).
                if log:
                    touched = list(dict.fromkeys(log))
                    pos = [p for p in (self._pos.get(r) for r in touched) if p is not None]
                    at = np.asarray(pos, dtype=np.int64)
                    removed = np.asarray(touched, dtype=np.int64)
                    if len(touched) > _REPLAY_INLINE:
                        # A long backlog (a big ingest during the build) is applied in the
                        # background too; searches stay exact meanwhile.
                        matrix = self.matrix
                        self._ann_log = []
                        self._ann_pending = _ann.catch_up(
                            graph,
                            removed,
                            self.rowids[at].copy(),
                            lambda start, stop: np.ascontiguousarray(matrix[:, at[start:stop]].T),
                        )
                        # Meanwhile: exact search, or the graph being replaced (it is kept
                        # up to date until then).
                        return self._ann_graph() if self._ann_pending.done() else self.ann
                    graph.remove(removed)
                    if len(at):
                        graph.add(self.rowids[at], np.ascontiguousarray(self.matrix[:, at].T))
                self.ann = graph
            except Exception:  # the graph is an optimisation: stay exact
                logger.warning("memory.sqlite.ann_unavailable", exc_info=True)
        return self.ann

    def persist_ann(self) -> None:
        """Save a graph changed since it was loaded (best effort; a stale file is reconciled)."""
        graph, target = self.ann, self._ann_target
        if graph is None or target is None or target[0] is None or not graph.dirty:
            return
        if self._ann_pending is not None:
            # A denser graph is being built to replace this one, and saves itself: writing
            # this one too would race it for the same file (and be rebuilt at the next open).
            return
        if not graph.conf.persist:
            return
        try:
            graph.save(*_ann.index_paths(target[0], target[1]))
        except OSError:
            logger.warning("memory.sqlite.ann_save_failed", exc_info=True)

    def __len__(self) -> int:
        return self.n - self.dead

    def count(self, category: int | None = None) -> int:
        """Live rows (of one category code): ``len(self)`` without a category."""
        if category is None:
            return len(self)
        n = self.n
        return int(np.count_nonzero(self.alive[:n] & (self.category[:n] == category)))

    def _grow(self, needed: int) -> None:
        cap = self.matrix.shape[1]
        if needed <= cap:
            return
        new_cap = max(needed, cap * 2)
        grown = np.zeros((self.dim, new_cap), dtype=np.float32)
        grown[:, : self.n] = self.matrix[:, : self.n]
        self.matrix = grown
        for name in ("rowids", "category", "created", "start", "valid_to", "expires"):
            setattr(self, name, np.resize(getattr(self, name), new_cap))
        self.superseded = np.resize(self.superseded, new_cap)
        self.alive = np.resize(self.alive, new_cap)
        self.alive[self.n :] = False

    def load_columns(self, columns: IndexColumns, vectors: NDArray[np.float32]) -> None:
        """Append rows given column by column (a load from SQLite, chunk by chunk).

        Only the matrix and its columns: :meth:`add` (a write) also feeds :attr:`lexical` and
        the graph, while a load adds every row's text to :attr:`lexical` in one call afterwards
        (one sort instead of one per chunk) and attaches the graph after that.
        """
        k = len(columns.rowids)
        if k == 0:
            return
        self._grow(self.n + k)
        sl = slice(self.n, self.n + k)
        self.matrix[:, sl] = vectors.T
        self.rowids[sl] = columns.rowids
        self.category[sl] = columns.category
        self.created[sl] = columns.created
        self.start[sl] = columns.start
        self.valid_to[sl] = columns.valid_to
        self.expires[sl] = columns.expires
        self.superseded[sl] = columns.superseded
        self.alive[sl] = True
        self._pos.update(zip(columns.rowids.tolist(), range(self.n, self.n + k), strict=True))
        self.n += k

    def add(
        self,
        rows: Sequence[IndexRow],
        vectors: NDArray[np.float32],
        bodies: Sequence[str] | None = None,
    ) -> None:
        """Append rows (and their vectors and stored analysed texts, one per row).

        Rows added without ``bodies`` have no terms: only dense search can find them.
        """
        k = len(rows)
        if k == 0:
            return
        self.lexical.add([""] * k if bodies is None else bodies)
        start = self.n
        self.load_columns(
            IndexColumns(
                rowids=np.fromiter((r.rowid for r in rows), dtype=np.int64, count=k),
                category=np.fromiter((r.category for r in rows), dtype=np.int8, count=k),
                created=np.fromiter((r.created_us for r in rows), dtype=np.int64, count=k),
                start=np.fromiter((r.start_us for r in rows), dtype=np.int64, count=k),
                valid_to=np.fromiter((r.valid_to_us for r in rows), dtype=np.int64, count=k),
                expires=np.fromiter((r.expires_us for r in rows), dtype=np.int64, count=k),
                superseded=np.fromiter((r.superseded for r in rows), dtype=np.bool_, count=k),
            ),
            vectors,
        )
        sl = slice(start, start + k)
        if self.ann is not None:
            try:
                self.ann.add(self.rowids[sl].copy(), np.asarray(vectors, dtype=np.float32))
            except Exception:  # never fail a committed write over derived data: drop the graph
                logger.warning("memory.sqlite.ann_add_failed", exc_info=True)
                self.ann = None
        if self._ann_log is not None:  # a graph is being loaded, built or rebuilt: replayed
            self._ann_log.extend(r.rowid for r in rows)
        elif self.ann is None:
            self._maybe_schedule_ann()
        else:
            self._maybe_densify()

    def remove(self, rowids: Sequence[int]) -> None:
        """Tombstone rows; compact when a quarter of the matrix is dead."""
        gone: list[int] = []
        for rowid in rowids:
            pos = self._pos.pop(rowid, None)
            if pos is not None and self.alive[pos]:
                self.alive[pos] = False
                self.dead += 1
                gone.append(rowid)
        if self._ann_log is not None:
            self._ann_log.extend(gone)
        if self.ann is not None and gone:
            try:
                self.ann.remove(np.asarray(gone, dtype=np.int64))
            except Exception:  # as in add(): results stay exact until the graph is rebuilt
                logger.warning("memory.sqlite.ann_remove_failed", exc_info=True)
                self.ann = None
        if self.dead and self.dead * 4 >= self.n:
            self._compact()

    def vector(self, rowid: int, *, copy: bool = True) -> NDArray[np.float32] | None:
        """The row's vector (a copy, or a read-only view), or None if the row is not indexed."""
        pos = self._pos.get(rowid)
        if pos is None:
            return None
        column = self.matrix[:, pos]
        if copy:
            return column.copy()
        column.flags.writeable = False
        return column

    def adjacent(self, rowid: int, hops: int = 1) -> tuple[list[int], list[int]]:
        """Rowids of up to ``hops`` live rows stored before and after ``rowid``, nearest first."""
        pos = self._pos.get(rowid)
        if pos is None:
            return [], []
        before: list[int] = []
        i = pos - 1
        while i >= 0 and len(before) < hops:
            if self.alive[i]:
                before.append(int(self.rowids[i]))
            i -= 1
        after: list[int] = []
        i = pos + 1
        while i < self.n and len(after) < hops:
            if self.alive[i]:
                after.append(int(self.rowids[i]))
            i += 1
        return before, after

    def supersede(self, rowid: int, valid_to_us: int) -> None:
        """Mark a row superseded from ``valid_to_us`` on."""
        pos = self._pos.get(rowid)
        if pos is not None:
            self.superseded[pos] = True
            self.valid_to[pos] = valid_to_us

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.lexical.compact(keep)
        self.matrix = np.ascontiguousarray(self.matrix[:, keep])
        for name in ("rowids", "category", "created", "start", "valid_to", "expires"):
            setattr(self, name, getattr(self, name)[keep].copy())
        self.superseded = self.superseded[keep].copy()
        self.alive = np.ones(len(keep), dtype=np.bool_)
        self.n = len(keep)
        self.dead = 0
        self._pos = {int(r): i for i, r in enumerate(self.rowids[: self.n])}
        if self.n == 0:
            self._grow(16)

    def mask(
        self,
        *,
        now_us: int,
        categories: Sequence[int] | None,
        since_us: int | None,
        until_us: int | None,
        as_of_us: int | None,
        include_superseded: bool,
        allowed_rowids: NDArray[np.int64] | None,
    ) -> NDArray[np.bool_]:
        """Boolean mask of live rows passing the filters (same rules as ``MemoryQuery.matches``)."""
        n = self.n
        m = self.alive[:n] & (self.expires[:n] > now_us)
        if categories is not None:
            # One comparison per category (there are six): np.isin sorts its inputs, which on
            # this int8 column costs ~150x more, and every dedup search filters one category.
            column = self.category[:n]
            wanted = np.zeros(n, dtype=np.bool_)
            for code in set(categories):
                wanted |= column == code
            m &= wanted
        if since_us is not None:
            m &= self.created[:n] >= since_us
        if until_us is not None:
            m &= self.created[:n] <= until_us
        if as_of_us is not None:
            m &= (self.start[:n] <= as_of_us) & (self.valid_to[:n] > as_of_us)
        elif not include_superseded:
            m &= ~self.superseded[:n] & (self.valid_to[:n] > now_us)
        if allowed_rowids is not None:
            m &= np.isin(self.rowids[:n], allowed_rowids)
        return m

    def search(
        self, vector: NDArray[np.float32], mask: NDArray[np.bool_], k: int
    ) -> list[tuple[int, float]]:
        """Top ``k`` ``(rowid, cosine)`` among masked rows, best first."""
        n = self.n
        if n == 0 or k <= 0:
            return []
        graph = self._ann_graph()
        if graph is not None:
            found = self._ann_search(graph, vector, mask, k)
            if found is not None:
                return found
        valid = int(mask.sum())
        k = min(k, valid)
        if k == 0:
            return []
        if valid * GATHER_BELOW <= n:
            # A selective filter (a rare category, a narrow time range): score only the rows
            # that pass (see GATHER_BELOW).
            pos = np.flatnonzero(mask)
            sub = vector @ self.matrix[:, pos]
            top = np.argpartition(-sub, k - 1)[:k] if k < len(pos) else np.arange(len(pos))
            order = np.lexsort((-self.rowids[pos[top]], -sub[top]))
            return [(int(self.rowids[pos[top[i]]]), float(sub[top[i]])) for i in order]
        scores = vector @ self.matrix[:, :n]
        scores = np.where(mask, scores, -np.inf)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        # Sort by score, then by rowid descending (newer first) for deterministic ties.
        order = np.lexsort((-self.rowids[top], -scores[top]))
        return [(int(self.rowids[top[i]]), float(scores[top[i]])) for i in order]

    def _ann_search(
        self, graph: _ann.AnnGraph, vector: NDArray[np.float32], mask: NDArray[np.bool_], k: int
    ) -> list[tuple[int, float]] | None:
        """Top ``k`` via the graph, post-filtered by ``mask``; None means "search exactly"."""
        live = len(self)
        passing = int(mask.sum())
        if passing <= k or passing < self.ann_settings.min_fraction * live:
            return None
        # Oversample by the share of rows the mask drops, so enough survive the post-filter.
        want = min(passing, int(np.ceil(k * live / passing * 1.2)) + 8)
        keys = graph.search(vector, want)
        pos = np.fromiter(
            (self._pos.get(int(r), -1) for r in keys), dtype=np.int64, count=len(keys)
        )
        pos = pos[pos >= 0]
        pos = pos[mask[pos]]
        if len(pos) < k:
            return None
        scores = vector @ self.matrix[:, pos]
        order = np.lexsort((-self.rowids[pos], -scores))[:k]
        return [(int(self.rowids[pos[i]]), float(scores[i])) for i in order]
