"""Copy a whole store into another one (``memvault migrate --from URL --to URL``).

Every memory of every agent and scope moves with its stored vector (nothing is re-embedded, so
both stores must use the same embedding model; re-embedding is ``memvault reindex``'s job). The
copy is made in batches, each one transaction of the destination, in the source's insertion
order: thread adjacency and score tie-breaks follow that order, so the copy searches exactly
like the original.

Resuming: importing skips ids the destination already has, so running the same migration again
after an interruption (a crash, Ctrl-C, a lost connection) finishes the job; a destination that
already holds part of the data is completed the same way.

Verifying: at the end the per-agent and total counts of both stores must be equal, and a sample
of entries (spread over the whole store) must match field for field and vector for vector;
otherwise :class:`~memvault.errors.MemoryStoreError` says what differs. Stop writers to the
source while it is copied, or the verification rightly fails.

Extra tables: stores with tables beside the memories (archive, audit) implement
:class:`~memvault.protocols.RowTableStore`; every table both stores have is copied after the
memories (same batching, same key-based idempotence) and its row counts are verified. A table
only the source has is named in :attr:`MigrationReport.tables_not_copied`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memvault.config import MemvaultConfig
from memvault.errors import MemoryConfigError, MemoryStoreError, MemoryValidationError
from memvault.models import MemoryEntry
from memvault.protocols import Embedder, MemoryStore, RowTableStore

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MigrationReport",
    "ProgressCallback",
    "TableReport",
    "migrate",
    "migrate_urls",
]

DEFAULT_BATCH_SIZE = 500
"""Memories per destination transaction."""

_SAMPLE_SIZE = 256
_MAX_PROBLEMS_SHOWN = 3

ProgressCallback = Callable[[int, int], None]
"""Called after each batch with (memories processed so far, memories in the source)."""


@dataclass(frozen=True, slots=True)
class TableReport:
    """What happened to one extra table (archive, audit ...)."""

    name: str
    copied: int
    skipped: int

    @property
    def total(self) -> int:
        """Rows read from the source."""
        return self.copied + self.skipped


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """The outcome of a verified migration."""

    source: str
    """Location of the source store."""
    destination: str
    """Location of the destination store."""
    total: int
    """Memories in the source (and, verified, in the destination)."""
    copied: int
    """Memories this run inserted."""
    skipped: int
    """Memories the destination already had (an earlier, interrupted run)."""
    agents: int
    """Agents whose counts were verified."""
    sampled: int
    """Entries compared field for field and vector for vector."""
    tables: tuple[TableReport, ...] = ()
    """Extra tables copied."""
    tables_not_copied: tuple[str, ...] = ()
    """Extra tables of the source the destination does not have."""
    seconds: float = 0.0
    """Wall-clock duration."""

    def summary(self) -> str:
        """One line for humans: copied / skipped / verified."""
        text = (
            f"migrated {self.source} -> {self.destination}: {self.copied} copied, "
            f"{self.skipped} skipped (already there), {self.total} verified "
            f"({self.agents} agent{'' if self.agents == 1 else 's'}, {self.sampled} sampled)"
        )
        for t in self.tables:
            text += f"; {t.name}: {t.copied} rows copied, {t.skipped} skipped"
        if self.tables_not_copied:
            text += f"; not copied (destination lacks them): {', '.join(self.tables_not_copied)}"
        return text


def check_same_model(source: MemoryStore, dest: MemoryStore) -> None:
    """Refuse to copy vectors between stores configured with different embedding models.

    Raises:
        MemoryConfigError: the model ids or dimensions differ (the message names both).
    """
    a, b = source.embedder, dest.embedder
    if a.model_id != b.model_id or a.dimension != b.dimension:
        msg = (
            f"cannot migrate {source.location} ({a.model_id!r}, {a.dimension} dims) to "
            f"{dest.location} ({b.model_id!r}, {b.dimension} dims): vectors are copied as they "
            "are, so both stores must use the same embedding model"
        )
        raise MemoryConfigError(msg)


async def migrate(
    source: MemoryStore,
    dest: MemoryStore,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressCallback | None = None,
    sample_size: int = _SAMPLE_SIZE,
) -> MigrationReport:
    """Copy every memory (with its vector) and every shared extra table from source to dest.

    Both stores are connected if they are not yet; the caller disconnects them. See the module
    docstring for ordering, resuming and verification.

    Raises:
        MemoryValidationError: ``batch_size`` or ``sample_size`` is out of range.
        MemoryConfigError: source and destination are the same store, or their embedding
            models differ.
        MemoryStoreError: a batch could not be written, or the copy did not verify.
    """
    if batch_size < 1:
        msg = f"batch_size must be >= 1, got {batch_size}"
        raise MemoryValidationError(msg)
    if sample_size < 0:
        msg = f"sample_size must be >= 0, got {sample_size}"
        raise MemoryValidationError(msg)
    if source is dest or (source.location == dest.location and source.location != "memory://"):
        msg = f"source and destination are the same store ({source.location})"
        raise MemoryConfigError(msg)
    check_same_model(source, dest)
    started = time.perf_counter()
    for store in (source, dest):
        if not store.is_connected:
            await store.connect()

    total = (await source.stats()).total
    # Every `step`-th entry is sampled, so the sample spreads over the whole store.
    step = max(1, -(-total // sample_size)) if sample_size else 0
    sample: list[tuple[str, str]] = []
    copied = seen = 0
    batch: list[MemoryEntry] = []
    async for entry in source.export_in_storage_order():
        if step and seen % step == 0 and len(sample) < sample_size:
            sample.append((entry.agent_id, entry.id))
        seen += 1
        batch.append(entry)
        if len(batch) >= batch_size:
            copied += await _copy_batch(source, dest, batch)
            batch = []
            if progress is not None:
                progress(seen, max(total, seen))
    if batch:
        copied += await _copy_batch(source, dest, batch)
    if progress is not None:
        progress(seen, max(total, seen))

    tables, not_copied = await _copy_tables(source, dest, batch_size)
    agents = await _verify(source, dest, sample, tables)
    return MigrationReport(
        source=source.location,
        destination=dest.location,
        total=seen,
        copied=copied,
        skipped=seen - copied,
        agents=agents,
        sampled=len(sample),
        tables=tables,
        tables_not_copied=not_copied,
        seconds=time.perf_counter() - started,
    )


async def _copy_batch(source: MemoryStore, dest: MemoryStore, batch: Sequence[MemoryEntry]) -> int:
    vectors = await source.export_vectors([e.id for e in batch])
    for e in batch:
        if e.id not in vectors:
            msg = (
                f"memory {e.id} has no vector in {source.location}: was it deleted during the "
                "migration? Run the migration again to finish it"
            )
            raise MemoryStoreError(msg)
    return await dest.import_with_vectors(batch, vectors)


async def _copy_tables(
    source: MemoryStore, dest: MemoryStore, batch_size: int
) -> tuple[tuple[TableReport, ...], tuple[str, ...]]:
    """Copy the extra tables both stores have; name those only the source has."""
    if not isinstance(source, RowTableStore):
        return (), ()
    theirs = set(dest.row_tables()) if isinstance(dest, RowTableStore) else set()
    reports: list[TableReport] = []
    missing: list[str] = []
    for table in source.row_tables():
        if table not in theirs:
            missing.append(table)
            continue
        assert isinstance(dest, RowTableStore)  # `theirs` is empty otherwise
        copied = read = 0
        rows: list[dict[str, Any]] = []
        async for row in source.export_rows(table):
            rows.append(row)
            if len(rows) >= batch_size:
                copied += await dest.import_rows(table, rows)
                read += len(rows)
                rows = []
        if rows:
            copied += await dest.import_rows(table, rows)
            read += len(rows)
        reports.append(TableReport(table, copied, read - copied))
    return tuple(reports), tuple(missing)


def _digest(entry: MemoryEntry) -> str:
    # Sorted keys: stores may hand back `metadata.extra` in another key order.
    text = json.dumps(entry.to_json(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


async def _verify(
    source: MemoryStore,
    dest: MemoryStore,
    sample: Sequence[tuple[str, str]],
    tables: Sequence[TableReport],
) -> int:
    """Compare counts, sampled entries and vectors, and table row counts; returns agents."""
    problems: list[str] = []
    agents = await source.agent_ids()
    for agent in agents:
        want, got = await source.count(agent), await dest.count(agent)
        if want != got:
            problems.append(f"agent {agent!r} has {want} memories in the source, {got} here")
    want_total, got_total = (await source.stats()).total, (await dest.stats()).total
    if want_total != got_total:
        problems.append(f"{want_total} memories in the source, {got_total} in the destination")
    ids = [mid for _, mid in sample]
    src_vecs = await source.export_vectors(ids)
    dst_vecs = await dest.export_vectors(ids)
    for agent, mid in sample:
        original, copy = await source.get(agent, mid), await dest.get(agent, mid)
        if original is None:
            continue  # deleted from the source meanwhile: the counts speak for it
        if copy is None:
            problems.append(f"memory {mid} of agent {agent!r} is missing")
        elif _digest(original) != _digest(copy):
            problems.append(f"memory {mid} of agent {agent!r} differs")
        elif not _same_vector(src_vecs.get(mid), dst_vecs.get(mid)):
            problems.append(f"the vector of memory {mid} differs")
    if tables:
        assert isinstance(source, RowTableStore) and isinstance(dest, RowTableStore)
        for t in tables:
            want, got = await source.count_rows(t.name), await dest.count_rows(t.name)
            if want != got:
                problems.append(f"table {t.name} has {want} rows in the source, {got} here")
    if problems:
        shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
        more = len(problems) - _MAX_PROBLEMS_SHOWN
        if more > 0:
            shown += f" (and {more} more)"
        msg = f"migration to {dest.location} did not verify: {shown}"
        raise MemoryStoreError(msg)
    return len(agents)


def _same_vector(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return x.shape == y.shape and x.tobytes() == y.tobytes()


# -- by URL (the CLI) ---------------------------------------------------------------------------


async def migrate_urls(
    source_url: str,
    dest_url: str,
    *,
    config: MemvaultConfig | None = None,
    embedder: Embedder | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressCallback | None = None,
) -> MigrationReport:
    """Open both stores by URL, :func:`migrate`, and close them again.

    Both stores use ``embedder`` (default: the one ``config`` names); each store still checks
    on connect that its vectors come from that model.

    Raises:
        MemoryConfigError: a URL is malformed, or the source is a file that does not exist.
        MemoryConnectionError: a store cannot be opened.
        MemoryStoreError: see :func:`migrate`.
    """
    from memvault.backends.factory import open_backend, parse_url

    cfg = config or MemvaultConfig()
    kind, target = parse_url(source_url)
    dest_kind, dest_target = parse_url(dest_url)  # both URLs are checked before opening any
    if kind == "sqlite":
        path = Path(target).expanduser()
        if not path.exists():
            # Opening a missing file would create an empty store and "migrate" nothing.
            msg = f"source store {target} does not exist"
            raise MemoryConfigError(msg)
        if dest_kind == "sqlite" and Path(dest_target).expanduser().resolve() == path.resolve():
            msg = f"source and destination are the same store ({path})"
            raise MemoryConfigError(msg)
    if kind in ("qdrant", "mem0") and not target.startswith(("http://", "https://")):
        # A local qdrant/mem0 store is a directory; opening a missing one would create it.
        directory = Path(target.partition("?")[0]).expanduser()
        if not directory.is_dir():
            msg = f"source store {directory} does not exist"
            raise MemoryConfigError(msg)
    if embedder is None:
        from memvault.backends.embedder import build_embedder

        # The source's model when the configuration names none: a copy keeps its vectors.
        embedder = build_embedder(cfg, url=source_url)
    source = open_backend(source_url, embedder=embedder, config=cfg)
    dest = open_backend(dest_url, embedder=embedder, config=cfg)
    try:
        return await migrate(source, dest, batch_size=batch_size, progress=progress)
    finally:
        for store in (source, dest):
            # Closing is best effort: the migration's outcome is already decided.
            with contextlib.suppress(Exception):
                await store.disconnect()
