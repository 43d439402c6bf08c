"""Copy a company's operational records from one store to another, verifying counts.

The design documents' planned runtime switch (SQLite to PostgreSQL): every table is copied in
insertion order in pages, records whose key the target already holds are left as they are (so
an interrupted copy is resumed by running it again), and each table's count is compared after.
"""

from __future__ import annotations

from collections.abc import Callable

from memvault.errors import MemoryStoreError
from memvault.persistence.backend import SQLPersistence

__all__ = ["PAGE", "copy_operations"]

PAGE = 5000
"""Records read and written per step."""


async def copy_operations(
    source: SQLPersistence,
    target: SQLPersistence,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, tuple[int, int]]:
    """Copy every operational table of ``source`` into ``target``; ``{table: (source, target)}``
    counts after the copy (both connected by the caller).

    Raises:
        MemoryStoreError: a table's target count is below its source count after the copy
            (a record the target refused, or one deleted from the target meanwhile).
    """
    counts: dict[str, tuple[int, int]] = {}
    theirs = target.repositories()
    for name, repo in source.repositories().items():
        dest = theirs[name]
        after = 0
        copied = 0
        while True:
            page = await repo.all_rows(after_seq=after, limit=PAGE)
            if not page:
                break
            await dest.add_new(record for _, record in page)
            after = page[-1][0]
            copied += len(page)
            if progress is not None:
                progress(name, copied)
        have, made = await repo.count(), await dest.count()
        counts[name] = (have, made)
        if made < have:
            msg = (
                f"operational table {name}: {have} records in {source.location}, only {made} in "
                f"{target.location} after the copy"
            )
            raise MemoryStoreError(msg)
    return counts
