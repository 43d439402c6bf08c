"""Which entries get consolidated: the selector half of the "selector + op" split.

A selector turns an agent's entries into :class:`EntryGroup` objects, each saying which entries
stay untouched (``keep``) and which an op merges into one new entry (``merge``). Selection is pure
and deterministic: the same entries always give the same groups in the same order, so a dry run
shows exactly what a real run will do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memvault.models import MemoryCategory, MemoryEntry, MemoryScope, aware_utc

__all__ = [
    "ConsolidationSelector",
    "EntryGroup",
    "HighestRelevanceSelector",
    "chunk_evenly",
    "eligible_entries",
    "group_by_similarity",
    "relevance_key",
]

_CATEGORY_ORDER = {category: position for position, category in enumerate(MemoryCategory)}


@dataclass(frozen=True, slots=True)
class EntryGroup:
    """One category's entries split into those kept as they are and those to be merged.

    ``merge`` is ordered oldest first (then by id), the order ops present them in, so a summary
    reads chronologically.
    """

    category: MemoryCategory
    keep: tuple[MemoryEntry, ...]
    merge: tuple[MemoryEntry, ...]

    @property
    def entries(self) -> tuple[MemoryEntry, ...]:
        """Every entry of the group, kept ones first."""
        return self.keep + self.merge


@runtime_checkable
class ConsolidationSelector(Protocol):
    """Decides which of an agent's entries are consolidated together."""

    def select(
        self, entries: Sequence[MemoryEntry], *, agent_id: str, now: datetime
    ) -> list[EntryGroup]:
        """Group ``entries`` of ``agent_id`` for consolidation at ``now`` (pure, deterministic)."""
        ...


def eligible_entries(
    entries: Sequence[MemoryEntry], *, agent_id: str, now: datetime
) -> list[MemoryEntry]:
    """The agent's private, live, not yet consolidated entries, duplicates by id removed.

    Shared and org entries are left out because merging them would withdraw knowledge other
    agents read; consolidated episodes were already turned into facts and must not be counted
    twice.
    """
    at = aware_utc(now) or now  # raises on a naive datetime; never None for a datetime
    seen: set[str] = set()
    result: list[MemoryEntry] = []
    for entry in entries:
        if entry.id in seen:
            continue
        seen.add(entry.id)
        if (
            entry.agent_id == agent_id
            and entry.scope is MemoryScope.PRIVATE
            and entry.consolidated_at is None
            and entry.is_live(at)
        ):
            result.append(entry)
    return result


def relevance_key(entry: MemoryEntry) -> tuple[float, float, int, datetime, str]:
    """Sort key, higher is more relevant: search score, importance, accesses, recency, id.

    A search ``relevance_score`` wins when present (entries fed from a search); otherwise the
    stored importance decides, then how often the entry was recalled, then how recently it was
    used or written. The id is the last tie-break so the order is total and deterministic.
    """
    recent = entry.last_accessed_at or entry.created_at
    recent = max(recent, entry.created_at)
    score = entry.relevance_score if entry.relevance_score is not None else -1.0
    return (score, entry.metadata.importance, entry.access_count, recent, entry.id)


def chunk_evenly(entries: Sequence[MemoryEntry], size: int) -> list[tuple[MemoryEntry, ...]]:
    """``entries`` split in order into as few runs of at most ``size`` as possible, their
    lengths differing by at most one (so no run is left with a lone entry when it can be
    helped: 6 entries in runs of 5 are 3 + 3, not 5 + 1)."""
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if not entries:
        return []
    count = -(-len(entries) // size)
    base, extra = divmod(len(entries), count)
    runs: list[tuple[MemoryEntry, ...]] = []
    start = 0
    for position in range(count):
        length = base + (1 if position < extra else 0)
        runs.append(tuple(entries[start : start + length]))
        start += length
    return runs


TIGHTEST_FIRST_MAX = 4_000
"""Up to this many entries of a category, runs start at the tightest cluster left (one n x n
pass over the vectors); beyond it, at the oldest entry (linear per run)."""


def _seed_order(matrix: np.ndarray, k: int) -> list[int]:
    """Positions by how close their ``k``-th nearest neighbour is, closest first (ties: older)."""
    n = len(matrix)
    if n > TIGHTEST_FIRST_MAX or k < 1 or n <= k:
        return list(range(n))
    tight = np.empty(n, dtype=np.float32)
    for start in range(0, n, 512):
        block = matrix[start : start + 512] @ matrix.T
        for row in range(len(block)):
            block[row, start + row] = -np.inf  # not its own neighbour
        tight[start : start + 512] = np.partition(block, n - k, axis=1)[:, n - k]
    return [int(i) for i in np.argsort(-tight, kind="stable")]


def group_by_similarity(
    entries: Sequence[MemoryEntry], size: int, vectors: Mapping[str, Any]
) -> list[tuple[MemoryEntry, ...]]:
    """``entries`` (oldest first) split into runs of at most ``size`` similar entries.

    The run sizes are those of :func:`chunk_evenly`. Each run starts at the entry not yet
    placed whose nearest neighbours are closest (the tightest cluster left; see
    :data:`TIGHTEST_FIRST_MAX`) and takes the unplaced entries most similar to it (cosine of
    ``vectors[id]``; ties go to the older entry), so one new memory holds one topic and each
    original's words find it. Entries without a vector follow, oldest first, in runs of their
    own. Deterministic; each run lists its entries oldest first.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    with_vec = [e for e in entries if e.id in vectors]
    without = [e for e in entries if e.id not in vectors]
    runs: list[tuple[MemoryEntry, ...]] = []
    if with_vec:
        matrix = np.stack([np.asarray(vectors[e.id], dtype=np.float32) for e in with_vec])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)
        placed = np.zeros(len(with_vec), dtype=bool)
        seeds = iter(_seed_order(matrix, size - 1))
        for run in chunk_evenly(with_vec, size):
            seed = next(i for i in seeds if not placed[i])
            placed[seed] = True
            members = [seed]
            if len(run) > 1:
                sims = matrix @ matrix[seed]
                sims[placed] = -np.inf
                # Most similar first; the stable sort keeps the older entry first on a tie.
                chosen = np.argsort(-sims, kind="stable")[: len(run) - 1]
                placed[chosen] = True
                members.extend(int(i) for i in chosen)
            runs.append(tuple(with_vec[i] for i in sorted(members)))
    runs.extend(chunk_evenly(without, size))
    return runs


class HighestRelevanceSelector:
    """Group by category; in groups of ``group_threshold`` or more, keep the best, merge the rest.

    The ``keep`` most relevant entries of a group (see :func:`relevance_key`) are left unchanged;
    every other entry of the group is merged. Groups smaller than ``group_threshold`` are left
    alone: there is too little in them to be worth a summary. ``categories`` restricts which
    categories are considered (all by default). ``max_group_size`` caps how many entries one
    new entry replaces: a category's entries to merge are split, oldest first, into runs of
    near-equal size (see :func:`chunk_evenly`), one :class:`EntryGroup` each (the kept entries
    ride with the first); None merges each category into one entry. With ``vectors`` (entry
    id -> embedding) the runs gather similar entries (:func:`group_by_similarity`) rather than
    neighbours in time.
    """

    def __init__(
        self,
        *,
        group_threshold: int = 3,
        keep: int = 1,
        categories: frozenset[MemoryCategory] | None = None,
        max_group_size: int | None = None,
        vectors: Mapping[str, Any] | None = None,
    ) -> None:
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        if group_threshold < 2 or group_threshold <= keep:
            msg = (
                f"group_threshold must be >= 2 and greater than keep ({keep}), "
                f"got {group_threshold}"
            )
            raise ValueError(msg)
        if max_group_size is not None and max_group_size < 2:
            raise ValueError(f"max_group_size must be >= 2, got {max_group_size}")
        self.group_threshold = group_threshold
        self.keep = keep
        self.categories = categories
        self.max_group_size = max_group_size
        self.vectors = vectors

    def __repr__(self) -> str:
        """Show the selector's settings."""
        return (
            f"HighestRelevanceSelector(group_threshold={self.group_threshold}, keep={self.keep}, "
            f"max_group_size={self.max_group_size})"
        )

    def select(
        self, entries: Sequence[MemoryEntry], *, agent_id: str, now: datetime
    ) -> list[EntryGroup]:
        """Return the eligible groups, in category declaration order."""
        by_category: dict[MemoryCategory, list[MemoryEntry]] = {}
        for entry in eligible_entries(entries, agent_id=agent_id, now=now):
            if self.categories is None or entry.category in self.categories:
                by_category.setdefault(entry.category, []).append(entry)
        groups: list[EntryGroup] = []
        for category in sorted(by_category, key=_CATEGORY_ORDER.__getitem__):
            members = by_category[category]
            if len(members) < self.group_threshold:
                continue
            ranked = sorted(members, key=relevance_key, reverse=True)
            keep = tuple(ranked[: self.keep])
            merge = tuple(sorted(ranked[self.keep :], key=lambda e: (e.created_at, e.id)))
            if self.max_group_size is None:
                groups.append(EntryGroup(category=category, keep=keep, merge=merge))
                continue
            runs = (
                chunk_evenly(merge, self.max_group_size)
                if not self.vectors
                else group_by_similarity(merge, self.max_group_size, self.vectors)
            )
            for position, run in enumerate(runs):
                kept = keep if position == 0 else ()
                groups.append(EntryGroup(category=category, keep=kept, merge=run))
        return groups
