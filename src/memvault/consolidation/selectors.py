"""Which entries get consolidated: the selector half of the "selector + op" split.

A selector turns an agent's entries into :class:`EntryGroup` objects, each saying which entries
stay untouched (``keep``) and which an op merges into one new entry (``merge``). Selection is pure
and deterministic: the same entries always give the same groups in the same order, so a dry run
shows exactly what a real run will do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from memvault.models import MemoryCategory, MemoryEntry, MemoryScope, aware_utc

__all__ = [
    "ConsolidationSelector",
    "EntryGroup",
    "HighestRelevanceSelector",
    "eligible_entries",
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


class HighestRelevanceSelector:
    """Group by category; in groups of ``group_threshold`` or more, keep the best, merge the rest.

    The ``keep`` most relevant entries of a group (see :func:`relevance_key`) are left unchanged;
    every other entry of the group is merged. Groups smaller than ``group_threshold`` are left
    alone: there is too little in them to be worth a summary. ``categories`` restricts which
    categories are considered (all by default).
    """

    def __init__(
        self,
        *,
        group_threshold: int = 3,
        keep: int = 1,
        categories: frozenset[MemoryCategory] | None = None,
    ) -> None:
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        if group_threshold < 2 or group_threshold <= keep:
            msg = (
                f"group_threshold must be >= 2 and greater than keep ({keep}), "
                f"got {group_threshold}"
            )
            raise ValueError(msg)
        self.group_threshold = group_threshold
        self.keep = keep
        self.categories = categories

    def __repr__(self) -> str:
        """Show the selector's settings."""
        return f"HighestRelevanceSelector(group_threshold={self.group_threshold}, keep={self.keep})"

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
            groups.append(EntryGroup(category=category, keep=keep, merge=merge))
        return groups
