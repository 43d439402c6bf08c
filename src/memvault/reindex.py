"""Re-embed every memory of a store with another embedding model (``memvault reindex``).

A store records the model its vectors come from and refuses to open with another one
(:class:`~memvault.errors.EmbeddingModelChangedError`); this module moves a store to a new model:

1. **Stage.** Every memory (every agent, private and shared alike: they live in one table) is
   embedded with the new model a batch at a time, and each batch's vectors are committed to a
   staging area of the store, keyed by memory and target model id. The old vectors and the
   recorded model stay as they are, so the store keeps answering searches with the old model
   (in this and in other processes) the whole time.
2. **Swap.** When no memory lacks a staged vector, one transaction of the store embeds whatever
   was written since the last batch, replaces every vector by its staged one, records the new
   model id and dimension, and drops the staging area. Derived indexes (SQLite's in-process
   matrices with their lexical postings and its HNSW graph files, PostgreSQL's HNSW index) are
   rebuilt from the new vectors.

**Resuming.** A run stopped anywhere (Ctrl-C, a crash, ``kill -9``) leaves the store working with
the old model, or, once the swap committed, with the new one. Running the same reindex again
embeds only the memories with no staged vector yet: finished batches are not redone.

**Archived memories** keep no vector (``restore`` embeds them with the store's model of the day),
so there is nothing to re-embed in the archive.

Backends take part through :class:`~memvault.protocols.ReindexableStore` (SQLite, PostgreSQL and
in-memory stores implement it; a composite store is reindexed child by child, every child
staged before any is swapped); any other backend raises
:class:`~memvault.errors.MemoryCapabilityError`.

Other processes: a SQLite store open elsewhere with the old model refuses further reads and
writes once the swap has committed (reopen it with the new model). On PostgreSQL, stop the other
writers (or restart them with the new model) when the swap is done: with an equal dimension
their writes would store vectors of the old model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryValidationError,
)
from memvault.protocols import Embedder, MemoryStore, ReindexableStore

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "ProgressCallback",
    "ReindexReport",
    "reindex",
    "reindex_sync",
]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 64
"""Memories embedded (and staged in one transaction) at a time."""

_PROBE_SIZE = 32
"""Memories the dry run embeds to measure the new model's speed."""

ProgressCallback = Callable[[int, int], None]
"""Called after each staged batch with (memories that have their new vector, memories in all)."""

Vectors = NDArray[np.float32]


@dataclasses.dataclass(frozen=True, slots=True)
class ReindexReport:
    """The outcome of a reindex (or of a dry run)."""

    location: str
    """Where the store lives."""
    source_model: str
    """The model the store's vectors came from before."""
    source_dimension: int
    target_model: str
    """The model the store's vectors come from now (after a dry run: would come from)."""
    target_dimension: int
    total: int
    """Memories in the store (all of them have a vector of the target model after a run)."""
    embedded: int = 0
    """Memories this run embedded in its batches."""
    resumed: int = 0
    """Memories an earlier, interrupted run had already staged (not embedded again)."""
    filled_at_swap: int = 0
    """Memories written during the run, embedded inside the swap's transaction."""
    swapped: bool = False
    """True when the new vectors replaced the old ones in this run."""
    dry_run: bool = False
    """True when nothing was written (``dry_run=True``)."""
    pending: int = 0
    """Dry run: memories that would be embedded (not staged yet)."""
    rate: float | None = None
    """Dry run: memories per second the target model embedded in the speed probe."""
    estimated_seconds: float | None = None
    """Dry run: ``pending / rate``."""
    seconds: float = 0.0
    """Wall-clock duration."""
    stores: tuple[str, ...] = ()
    """Locations of the stores reindexed (a composite store's children)."""

    @property
    def up_to_date(self) -> bool:
        """True when the store already used the target model and nothing was done."""
        return not self.dry_run and not self.swapped

    def summary(self) -> str:
        """One line for humans."""
        models = f"{self.source_model} ({self.source_dimension}d) -> "
        models += f"{self.target_model} ({self.target_dimension}d)"
        if self.dry_run:
            text = f"dry run: {self.pending} of {self.total} memories in {self.location} would be "
            text += f"re-embedded, {models}"
            if self.estimated_seconds is not None and self.rate is not None:
                text += f"; {_duration(self.estimated_seconds)} at {self.rate:.0f}/s"
            if self.total - self.pending:
                text += f" ({self.total - self.pending} already staged by an interrupted run)"
            return text
        if not self.swapped:
            return (
                f"{self.location} already uses {self.target_model} "
                f"({self.target_dimension}d): nothing to reindex"
            )
        text = f"reindexed {self.total} memories in {self.location}, {models}: "
        text += f"{self.embedded} embedded"
        if self.resumed:
            text += f", {self.resumed} resumed from an interrupted run"
        if self.filled_at_swap:
            text += f", {self.filled_at_swap} written meanwhile embedded at the swap"
        return text + f" in {self.seconds:.1f}s"

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict of every field (``memvault reindex --json``)."""
        return {
            "location": self.location,
            "stores": list(self.stores),
            "source_model": self.source_model,
            "source_dimension": self.source_dimension,
            "target_model": self.target_model,
            "target_dimension": self.target_dimension,
            "total": self.total,
            "embedded": self.embedded,
            "resumed": self.resumed,
            "filled_at_swap": self.filled_at_swap,
            "swapped": self.swapped,
            "dry_run": self.dry_run,
            "pending": self.pending,
            "rate": self.rate,
            "estimated_seconds": self.estimated_seconds,
            "seconds": round(self.seconds, 3),
        }


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {seconds:.0f}s"
    if seconds < 90 * 60:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


class _StoredModel:
    """Stands for the model a store was built with, so the store opens for reindexing.

    It only names the model (id and dimension, as the store records them); it embeds nothing,
    so the old model need not be installed to move a store off it.
    """

    def __init__(self, model_id: str, dimension: int) -> None:
        self._model_id = model_id
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def _refuse(self) -> Vectors:
        msg = (
            f"this store is open for reindexing off {self._model_id!r} and cannot embed with it; "
            "wait for the reindex to finish, then reopen the store with the new model"
        )
        raise MemoryConfigError(msg)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._refuse()

    def embed_query(self, text: str) -> Vectors:
        return self._refuse()


def _backend_of(store: Any) -> MemoryStore:
    """The backend behind ``store`` (a backend, or an ``AsyncMemory``)."""
    from memvault.memory import AsyncMemory

    if isinstance(store, AsyncMemory):
        store = store.backend
    if not isinstance(store, MemoryStore):
        msg = (
            f"reindex needs a memvault store (a backend, Memory or AsyncMemory), "
            f"got {type(store).__name__}"
        )
        raise MemoryCapabilityError(msg)
    return store


def _leaves(store: MemoryStore) -> list[ReindexableStore]:
    """The stores that hold vectors: ``store`` itself, or a composite's children."""
    from memvault.backends.composite import CompositeBackend

    if isinstance(store, CompositeBackend):
        out: list[ReindexableStore] = []
        for child in store.children:
            for leaf in _leaves(child):
                if not any(leaf is seen for seen in out):
                    out.append(leaf)
        return out
    if not isinstance(store, ReindexableStore):
        msg = (
            f"the {store.backend_name} backend ({store.location}) does not support reindex: "
            "export its memories (memvault export) and import them into a store built with "
            "the new model instead"
        )
        raise MemoryCapabilityError(msg)
    return [store]


async def _open(leaf: ReindexableStore) -> None:
    """Connect ``leaf``, with a stand-in for the model its vectors come from if need be."""
    assert isinstance(leaf, MemoryStore)
    if leaf.is_connected:
        return
    try:
        await leaf.connect()
    except EmbeddingModelChangedError as exc:
        dim = exc.stored_dimension if isinstance(exc, DimensionMismatchError) else None
        leaf.reindex_use_embedder(
            _StoredModel(exc.stored_model, dim if dim is not None else leaf.embedder.dimension)
        )
        await leaf.connect()


def _embedder_fn(embedder: Embedder) -> Callable[[list[str]], Vectors]:
    """``embedder.embed_documents`` with its output checked (shape and finite values)."""

    def embed(texts: list[str]) -> Vectors:
        arr = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
        if arr.shape != (len(texts), embedder.dimension):
            msg = (
                f"embedder {embedder.model_id} returned shape {arr.shape}, "
                f"expected ({len(texts)}, {embedder.dimension})"
            )
            raise MemoryCapabilityError(msg)
        if not np.isfinite(arr).all():
            msg = f"embedder {embedder.model_id} returned NaN or infinite values"
            raise MemoryCapabilityError(msg)
        return arr

    return embed


async def reindex(
    store: Any,
    embedder: Embedder,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressCallback | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> ReindexReport:
    """Re-embed every memory of ``store`` with ``embedder`` (see the module docstring).

    ``store`` is a backend (:class:`~memvault.protocols.MemoryStore`), an
    :class:`~memvault.AsyncMemory` or a :class:`~memvault.Memory`; it is connected if it is not
    yet (a store built with another model opens for the purpose), and the caller closes it.
    Afterwards it indexes and searches with ``embedder``. ``progress(done, total)`` is called
    after each batch. ``dry_run`` writes nothing: the report says how many memories would be
    embedded and, from a quick probe of ``embedder``, about how long it would take. A store
    already on ``embedder``'s model is left alone unless ``force``.

    Raises:
        MemoryValidationError: ``batch_size`` below 1, or ``embedder`` is not an Embedder.
        MemoryCapabilityError: the backend (or a composite's child) does not support reindex,
            or the embedder returned vectors of the wrong shape.
        MemoryStoreError: a batch or the swap could not be written (the store is unchanged by
            the failed step; run again to resume).
    """
    from memvault.memory import Memory

    if isinstance(store, Memory):
        # A sync Memory runs its store on its own loop thread: reindex there.
        return await asyncio.to_thread(
            reindex_sync,
            store,
            embedder,
            batch_size=batch_size,
            progress=progress,
            dry_run=dry_run,
            force=force,
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        msg = f"batch_size must be an integer >= 1, got {batch_size!r}"
        raise MemoryValidationError(msg)
    if not isinstance(embedder, Embedder):
        msg = f"embedder must be an Embedder, got {type(embedder).__name__}"
        raise MemoryValidationError(msg)
    started = time.perf_counter()
    backend = _backend_of(store)
    leaves = _leaves(backend)
    for leaf in leaves:
        await _open(leaf)
    model, dim = embedder.model_id, embedder.dimension
    todo = [
        leaf
        for leaf in leaves
        if force or leaf.embedder.model_id != model or leaf.embedder.dimension != dim
    ]
    # A composite's children may differ here (an in-process child made with the new model).
    source = (todo or leaves)[0].embedder if leaves else embedder
    counts = [await leaf.reindex_status(model) for leaf in todo]
    total = sum(t for t, _ in counts)
    staged_before = sum(s for _, s in counts)
    base = ReindexReport(
        location=backend.location,
        source_model=source.model_id,
        source_dimension=source.dimension,
        target_model=model,
        target_dimension=dim,
        total=total,
        stores=tuple(leaf.location for leaf in todo),
    )
    if dry_run:
        pending = total - staged_before
        rate = await _probe(todo, embedder) if pending else None
        return dataclasses.replace(
            base,
            resumed=staged_before,
            dry_run=True,
            pending=pending,
            rate=rate,
            estimated_seconds=None if rate is None else pending / rate,
            seconds=time.perf_counter() - started,
        )
    if not todo:
        return dataclasses.replace(base, total=sum([await _count(leaf) for leaf in leaves]))

    embed = _embedder_fn(embedder)
    done = staged_before
    embedded = 0
    if progress is not None:
        progress(done, total)
    for leaf in todo:
        await leaf.reindex_begin(model)
        after: str | None = None
        while True:
            batch = await leaf.reindex_pending(model, batch_size, after=after)
            if not batch:
                if after is None:
                    break
                # The end of the pages: one more pass from the start finds what was written
                # meanwhile behind the cursor (or a cursor memory deleted meanwhile).
                after = None
                continue
            after = batch[-1][0]
            matrix = await asyncio.to_thread(embed, [text for _, text in batch])
            staged = await leaf.reindex_stage(
                model, {mid: matrix[i] for i, (mid, _) in enumerate(batch)}
            )
            embedded += staged
            done += staged
            # Memories written meanwhile join the total (the pending query finds them too).
            total = max(total, done)
            if progress is not None:
                progress(done, total)
    filled = 0
    for leaf in todo:
        filled += await leaf.reindex_swap(embedder, embed)
    total_after = sum([await _count(leaf) for leaf in todo])
    report = dataclasses.replace(
        base,
        total=total_after,
        embedded=embedded,
        resumed=staged_before,
        filled_at_swap=filled,
        swapped=True,
        seconds=time.perf_counter() - started,
    )
    if progress is not None:
        progress(total_after, total_after)
    logger.info("memory.reindex.done", extra=report.to_json())
    return report


def reindex_sync(
    store: Any,
    embedder: Embedder,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressCallback | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> ReindexReport:
    """:func:`reindex` for synchronous callers (a :class:`~memvault.Memory`, or a backend).

    A ``Memory`` is reindexed on its own event loop thread; anything else in a new event loop
    (do not call this from inside a running loop: await :func:`reindex` there).
    """
    from memvault.memory import Memory

    if isinstance(store, Memory):
        return store._run(
            reindex(
                store.aio,
                embedder,
                batch_size=batch_size,
                progress=progress,
                dry_run=dry_run,
                force=force,
            )
        )
    return asyncio.run(
        reindex(
            store,
            embedder,
            batch_size=batch_size,
            progress=progress,
            dry_run=dry_run,
            force=force,
        )
    )


async def _count(leaf: ReindexableStore) -> int:
    # Any model id: only the number of memories is used.
    total, _ = await leaf.reindex_status(leaf.embedder.model_id)
    return total


async def _probe(leaves: Sequence[ReindexableStore], embedder: Embedder) -> float | None:
    """Memories per second ``embedder`` embeds, measured on up to 32 of the store's own texts.

    One text is embedded first and not timed: loading a model takes longer than a batch.
    """
    texts: list[str] = []
    for leaf in leaves:
        texts.extend(t for _, t in await leaf.reindex_pending(embedder.model_id, _PROBE_SIZE))
        if len(texts) >= _PROBE_SIZE:
            break
    if not texts:
        return None
    embed = _embedder_fn(embedder)
    await asyncio.to_thread(embed, texts[:1])
    started = time.perf_counter()
    await asyncio.to_thread(embed, texts[:_PROBE_SIZE])
    elapsed = max(time.perf_counter() - started, 1e-6)
    return min(len(texts[:_PROBE_SIZE]), _PROBE_SIZE) / elapsed
