"""An approximate (HNSW) vector index for large agents, as derived data beside the SQLite file.

Exact search (:class:`~memvault.backends.sqlite.vector_index.AgentIndex`) is one matrix-vector
product: ~10 ms at 100k rows and ~100 ms at 1M on two cores. Above :data:`AnnSettings.min_rows`
rows an agent's matrix also gets a `usearch <https://github.com/unum-cloud/usearch>`_ HNSW graph
keyed by SQLite rowid; unfiltered (or mildly filtered) searches ask the graph, selective ones
stay exact. The graph is derived data, never the source of truth:

* It lives in ``<db>.ann/<key>.usearch`` with a ``<key>.json`` sidecar holding the file's size
  and SHA-256 (HNSW libraries load a byte-flipped file without complaint, so the checksum is
  ours). Files are written to a temporary name and renamed, index first, sidecar last: a crash
  at any point leaves either the previous pair or a pair whose checksum does not match.
* Loading verifies the checksum, then reconciles the graph with the rows SQLite holds now
  (rowids missing from the graph are added, rowids gone are removed, a rowid whose stored
  vector differs is replaced); a missing, corrupt, foreign or too stale file is rebuilt.
* Loading and building run on a background (daemon) thread; until the graph is ready the agent
  is served by exact search, so no search ever waits for (or fails because of) the graph.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["AnnGraph", "AnnSettings", "ann_available", "catch_up", "schedule", "settings"]

logger = logging.getLogger("memvault.backends.sqlite.ann")

FORMAT = 2
"""Sidecar format version; another value means rebuild (1: float32 graphs, before int8)."""

CHUNK = 65_536
"""Rows gathered, added or compared at a time (bounds the extra memory of a load or build)."""

_SAME_VECTOR = 1.5 / 127
"""Largest component difference between a graph's copy of a vector and the stored one that
still counts as the same vector: an int8 graph truncates each component to a multiple of 1/127.
A vector that moved less than that is found as well by its old copy (results are rescored
exactly on the float32 matrix)."""

Gather = Callable[[int, int], NDArray[np.float32]]
"""``gather(start, stop)``: the vectors of rows ``start .. stop`` of a rowid snapshot."""

MIN_ROWS_ENV = "MEMVAULT_SQLITE_ANN_MIN_ROWS"
"""Environment variable overriding :attr:`AnnSettings.min_rows` (``0`` disables ANN)."""

DEFAULT_MIN_ROWS = 50_000
"""Below this, exact search costs under ~5 ms and needs no graph (nor its build)."""


@dataclass
class AnnSettings:
    """How the HNSW graphs are built, searched and kept.

    :data:`settings` is the process-wide default (benchmarks change it); a store or index given
    its own (``SQLiteBackend(ann=AnnSettings(...))``, ``AgentIndex(ann=...)``) uses that one.
    """

    min_rows: int = DEFAULT_MIN_ROWS
    """Agents with at least this many rows get a graph; 0 disables ANN entirely."""
    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 128
    """Search beam; raised to ``ef_per_k * k`` when more results are asked for."""
    ef_per_k: int = 4
    large_rows: int = 500_000
    """Graphs of at least this many rows are built denser and searched with a wider beam (the
    three settings below): at 1M rows the default graph kept 0.922 of the exact top 10 end to
    end, the denser one 0.955-0.967 in float32 and 0.983 in int8 (benchmarks/results/ann.md).
    Below it the default graph already keeps 0.98-0.99 and answers faster."""
    large_connectivity: int = 32
    large_expansion_add: int = 200
    large_ef_per_k: int = 8
    build_threads: int = 2
    min_fraction: float = 0.2
    """A filter mask passing less than this share of the live rows is searched exactly (the
    graph is asked for ``k / share`` rows, so rarer filters would need very wide searches)."""
    scalar: str = "i8"
    """How the graph stores its vectors (usearch ``dtype``): int8 (each unit-vector component
    truncated to 1/127) finds the same neighbours as float32 - exact search rescores them on
    the float32 matrix - in 0.4x the search time, half the build time and a third of the
    memory (100k real vectors, benchmarks/results/ann.md). ``"f32"`` keeps full precision."""
    background: bool = True
    """Load/build on a background thread (False: synchronously, for tests)."""
    persist: bool = True
    chunk: int = CHUNK
    """Rows gathered, added or compared at a time (bounds the extra memory of a load or build)."""


def _env_min_rows() -> int:
    raw = os.environ.get(MIN_ROWS_ENV, "").strip()
    if not raw:
        return DEFAULT_MIN_ROWS
    try:
        return max(0, int(raw))
    except ValueError:
        logger.warning("memory.sqlite.ann_bad_min_rows", extra={"value": raw})
        return DEFAULT_MIN_ROWS


settings = AnnSettings(min_rows=_env_min_rows())
"""The default settings (``MEMVAULT_SQLITE_ANN_MIN_ROWS`` sets ``min_rows``)."""


def _conf(conf: AnnSettings | None) -> AnnSettings:
    return settings if conf is None else conf


@functools.cache
def ann_available() -> bool:
    """Whether usearch is importable (a dependency; if it is missing, search stays exact).

    onnxruntime (the default embedder's runtime) is imported first: with usearch 2.25+ (which
    loads ``numkong``), importing onnxruntime *after* usearch segfaults (onnxruntime 1.32); in
    this order both load. The dependency pin (``usearch>=2.21,<2.25``) avoids it as well.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


class GraphShape(NamedTuple):
    """How a graph is built and searched: degree (HNSW ``M``), build beam, search beam per row
    asked."""

    connectivity: int
    expansion_add: int
    ef_per_k: int


def shape_for(rows: int, conf: AnnSettings | None = None) -> GraphShape:
    """The shape for an agent of ``rows`` rows (denser and wider from ``large_rows``) under
    ``conf`` (default :data:`settings`)."""
    c = _conf(conf)
    if rows >= c.large_rows:
        return GraphShape(c.large_connectivity, c.large_expansion_add, c.large_ef_per_k)
    return GraphShape(c.connectivity, c.expansion_add, c.ef_per_k)


_build_lock = threading.Lock()
"""One load/build at a time per process (each takes CPU and a copy of the vectors)."""


def index_paths(db_path: Path, key: str) -> tuple[Path, Path]:
    """The graph file and its sidecar for one index key (agent id or the shared key)."""
    name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    directory = db_path.with_name(db_path.name + ".ann")
    return directory / f"{name}.usearch", directory / f"{name}.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


class AnnGraph:
    """A usearch HNSW graph of unit vectors keyed by rowid (inner product = cosine)."""

    def __init__(self, dim: int, rows: int = 0, *, conf: AnnSettings | None = None) -> None:
        """An empty graph shaped for about ``rows`` rows (see :func:`shape_for`), built and
        searched under ``conf`` (default :data:`settings`)."""
        from usearch.index import Index

        self.conf = _conf(conf)
        shape = shape_for(rows, self.conf)
        self.dim = dim
        self.index = Index(
            ndim=dim,
            metric="ip",
            dtype=self.conf.scalar,
            connectivity=shape.connectivity,
            expansion_add=shape.expansion_add,
            expansion_search=self.conf.expansion_search,
        )
        self.dirty = False

    def __len__(self) -> int:
        return len(self.index)

    @classmethod
    def build(
        cls,
        dim: int,
        rowids: NDArray[np.int64],
        gather: Gather,
        *,
        conf: AnnSettings | None = None,
    ) -> AnnGraph:
        """A new graph of ``rowids``, their vectors gathered a chunk at a time (so a build never
        holds a second copy of the whole matrix)."""
        graph = cls(dim, len(rowids), conf=conf)
        graph.add_gathered(rowids, gather)
        graph.dirty = True
        return graph

    def add_gathered(self, rowids: NDArray[np.int64], gather: Gather) -> None:
        """Add ``rowids`` a chunk of vectors at a time, with the build's threads."""
        chunk = self.conf.chunk
        for start in range(0, len(rowids), chunk):
            stop = min(start + chunk, len(rowids))
            self.add(rowids[start:stop], gather(start, stop), threads=self.conf.build_threads)

    def add(
        self, rowids: NDArray[np.int64], vectors: NDArray[np.float32], *, threads: int = 1
    ) -> None:
        if len(rowids):
            self.index.add(
                rowids.astype(np.uint64),
                np.ascontiguousarray(vectors, dtype=np.float32),
                threads=threads,
            )
            self.dirty = True

    def remove(self, rowids: NDArray[np.int64]) -> None:
        if len(rowids):
            self.index.remove(rowids.astype(np.uint64))
            self.dirty = True

    def search(self, vector: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        """Rowids of (about) the ``k`` nearest vectors, best first."""
        if k <= 0 or len(self.index) == 0:
            return np.zeros(0, dtype=np.int64)
        ef = max(self.conf.expansion_search, shape_for(len(self.index), self.conf).ef_per_k * k)
        if self.index.expansion_search != ef:
            # usearch declares the setter on the wrong property name; it works at runtime.
            self.index.expansion_search = ef  # type: ignore[misc]
        found = self.index.search(np.asarray(vector, dtype=np.float32), k, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    # -- persistence ----------------------------------------------------------------------------

    def save(self, path: Path, sidecar: Path) -> None:
        """Write the graph and its sidecar atomically (temp file, fsync, rename; sidecar last)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        side_tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            # An old sidecar must never vouch for a new graph file: drop it first.
            with contextlib.suppress(FileNotFoundError):
                sidecar.unlink()
            self.index.save(str(tmp))
            with tmp.open("rb+") as f:
                os.fsync(f.fileno())
            meta = {
                "format": FORMAT,
                "dim": self.dim,
                "size": tmp.stat().st_size,
                "sha256": _sha256(tmp),
                "count": len(self.index),
                "scalar": self.conf.scalar,
            }
            os.replace(tmp, path)
            side_tmp.write_text(json.dumps(meta))
            with side_tmp.open("rb+") as f:
                os.fsync(f.fileno())
            os.replace(side_tmp, sidecar)
            self.dirty = False
        finally:
            for leftover in (tmp, side_tmp):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()

    @classmethod
    def load(
        cls, path: Path, sidecar: Path, dim: int, *, conf: AnnSettings | None = None
    ) -> AnnGraph | None:
        """The saved graph, or None when it is missing, foreign (another ``conf.scalar``
        included), truncated or corrupt."""
        c = _conf(conf)
        try:
            meta = json.loads(sidecar.read_text())
            if (
                meta.get("format") != FORMAT
                or meta.get("dim") != dim
                or meta.get("scalar") != c.scalar
            ):
                return None
            if path.stat().st_size != meta["size"] or _sha256(path) != meta["sha256"]:
                logger.warning("memory.sqlite.ann_corrupt", extra={"path": str(path)})
                return None
            graph = cls(dim, conf=c)
            graph.index.load(str(path))
            if graph.index.ndim != dim:
                return None
            if graph.index.connectivity >= c.large_connectivity:
                # The file keeps its degree, not its build beam: later adds build like it did.
                # usearch types the property read-only; the setter exists at runtime.
                graph.index.expansion_add = c.large_expansion_add  # type: ignore[misc]
        except FileNotFoundError:
            return None
        except Exception:  # any load failure means "rebuild", never a failed search
            logger.warning(
                "memory.sqlite.ann_load_failed", extra={"path": str(path)}, exc_info=True
            )
            return None
        return graph

    def reconcile(self, rowids: NDArray[np.int64], gather: Gather) -> bool:
        """Bring the graph in line with ``rowids`` (the rows SQLite holds now; their vectors from
        ``gather``), comparing a chunk at a time.

        Returns False when the graph is too far off to be worth patching (rebuild instead).
        """
        keys = np.asarray(self.index.keys, dtype=np.int64)
        present = np.isin(rowids, keys)
        extra = keys[~np.isin(keys, rowids)]
        limit = max(1000, len(rowids) // 5)
        patch = len(extra) + int((~present).sum())
        if patch > limit:
            return False
        again_rows: list[NDArray[np.int64]] = []
        again_vectors: list[NDArray[np.float32]] = []
        changed: list[NDArray[np.int64]] = []
        chunk = self.conf.chunk
        for start in range(0, len(rowids), chunk):
            stop = min(start + chunk, len(rowids))
            here = present[start:stop]
            vectors = gather(start, stop)
            common = rowids[start:stop][here]
            redo = ~here
            if len(common):
                got: Any = self.index.get(common.astype(np.uint64), dtype=np.float32)
                parts = list(got) if isinstance(got, tuple) else [got]
                if any(v is None for v in parts):
                    return False
                stored = np.vstack(parts).astype(np.float32, copy=False)
                stored = stored.reshape(len(common), self.dim)
                diff = np.abs(stored - vectors[here]).max(axis=1) > _SAME_VECTOR
                changed.append(common[diff])
                patch += int(diff.sum())
                if patch > limit:
                    return False
                redo[np.flatnonzero(here)[diff]] = True
            if redo.any():
                again_rows.append(rowids[start:stop][redo])
                again_vectors.append(np.ascontiguousarray(vectors[redo]))
        self.remove(np.concatenate([extra, *changed]))
        if again_rows:
            self.add(np.concatenate(again_rows), np.concatenate(again_vectors))
        return True


def load_or_build(
    db_path: Path | None,
    key: str,
    dim: int,
    rowids: NDArray[np.int64],
    gather: Gather,
    *,
    fresh: bool = False,
    conf: AnnSettings | None = None,
) -> AnnGraph:
    """The agent's graph from disk (reconciled with ``rowids`` and their vectors), else built;
    ``fresh`` builds without looking at the file. ``conf``: default :data:`settings`.

    ``rowids`` is a snapshot; ``gather(start, stop)`` returns the vectors of
    ``rowids[start:stop]`` (one row each) from memory the caller no longer writes. Runs on the
    background thread.
    """
    c = _conf(conf)
    graph: AnnGraph | None = None
    paths = index_paths(db_path, key) if db_path is not None and c.persist else None
    if paths is not None and not fresh:
        graph = AnnGraph.load(*paths, dim, conf=c)
        # A graph saved while the agent was smaller is rebuilt once it is large enough to want
        # the denser shape (never the other way: an agent shrinking below the bar keeps it).
        if graph is not None and graph.index.connectivity < shape_for(len(rowids), c).connectivity:
            graph = None
        if graph is not None and not graph.reconcile(rowids, gather):
            graph = None
    if graph is None:
        graph = AnnGraph.build(dim, rowids, gather, conf=c)
    if paths is not None and graph.dirty:
        try:
            graph.save(*paths)
        except OSError:
            logger.warning("memory.sqlite.ann_save_failed", extra={"key": key}, exc_info=True)
    return graph


def schedule(
    db_path: Path | None,
    key: str,
    dim: int,
    rowids: NDArray[np.int64],
    gather: Gather,
    *,
    fresh: bool = False,
    conf: AnnSettings | None = None,
) -> Future[AnnGraph]:
    """Load (unless ``fresh``) or build the graph, on the background thread unless
    ``conf.background`` (default :data:`settings`) is off."""
    c = _conf(conf)
    return _submit(lambda: load_or_build(db_path, key, dim, rowids, gather, fresh=fresh, conf=c), c)


def catch_up(
    graph: AnnGraph, removed: NDArray[np.int64], rowids: NDArray[np.int64], gather: Gather
) -> Future[AnnGraph]:
    """Apply the writes made while ``graph`` was loaded or built: drop ``removed``, then add
    ``rowids`` (their vectors from ``gather()``), in the background like a build.

    Thousands of single inserts would take seconds (about 0.5 ms each), so a long backlog is
    never replayed on a search's path.
    """

    def work() -> AnnGraph:
        graph.remove(removed)
        graph.add_gathered(rowids, gather)
        return graph

    return _submit(work, graph.conf)


def _submit(job: Callable[[], AnnGraph], conf: AnnSettings) -> Future[AnnGraph]:
    if conf.background:
        # A daemon thread, not an executor: interpreter exit must not wait minutes for a build
        # (a write cut short leaves only a temporary file; the graph is rebuilt next time).
        future: Future[AnnGraph] = Future()

        def work() -> None:
            try:
                with _build_lock:
                    future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=work, name="memvault-ann", daemon=True).start()
        return future
    done: Future[AnnGraph] = Future()
    try:
        done.set_result(job())
    except Exception as exc:  # surfaced through the future, then ignored
        done.set_exception(exc)
    return done
