"""Filter strategies applied to retrieved memories before they are injected (Decision Log D23).

Only non-inferable memories are worth a prompt's tokens: prior decisions, learned conventions,
interpersonal context, historical outcomes; not what an agent can read from the code or its
environment. The initial strategy is tag based: writers tag such memories ``non-inferable``
(:func:`check_non_inferable_tag` reminds them, advisory only) and :class:`NonInferableFilter`
keeps only those. Strategies are pluggable through :class:`MemoryFilterStrategy`.

Filters guard what reaches a prompt, so :func:`apply_filter` fails closed: a strategy that raises
(or returns something that is not a subset of its input) yields no memories, never the unfiltered
list.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memvault.models import MemoryEntry, MemoryStoreRequest

__all__ = [
    "NON_INFERABLE_TAG",
    "MemoryFilterStrategy",
    "NonInferableFilter",
    "TagFilter",
    "apply_filter",
    "check_non_inferable_tag",
]

logger = logging.getLogger(__name__)

NON_INFERABLE_TAG = "non-inferable"
"""The tag convention marking memories an agent could not infer from its environment."""


@runtime_checkable
class MemoryFilterStrategy(Protocol):
    """Decides which retrieved memories may be injected into an agent's prompt."""

    @property
    def name(self) -> str:
        """Short name of the strategy, used in logs."""
        ...

    def filter(self, entries: Sequence[MemoryEntry], *, query_text: str) -> list[MemoryEntry]:
        """Return the entries that may be injected, best first (a subset of ``entries``)."""
        ...


def _clean_tags(tags: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(tags, str):
        # A bare string is almost always a mistake for a one-tag tuple; iterating it would
        # silently filter on single characters.
        msg = f"{what} must be a collection of tags, not the string {tags!r}"
        raise TypeError(msg)
    cleaned: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            msg = f"{what} holds an invalid tag {tag!r}: tags are non-empty strings"
            raise ValueError(msg)
        cleaned.add(tag.strip())
    return frozenset(cleaned)


@dataclass(frozen=True, slots=True)
class NonInferableFilter:
    """Keep only memories tagged ``tag`` (default ``non-inferable``).

    Tags match exactly (case-sensitive), as :class:`~memvault.models.MemoryQuery` tags do; an
    entry tagged differently is left out, which is the safe side for a filter.
    """

    tag: str = NON_INFERABLE_TAG

    def __post_init__(self) -> None:
        if not isinstance(self.tag, str) or not self.tag.strip():
            msg = f"NonInferableFilter needs a non-empty tag, got {self.tag!r}"
            raise ValueError(msg)
        object.__setattr__(self, "tag", self.tag.strip())

    @property
    def name(self) -> str:
        """Short name of the strategy, used in logs."""
        return "non_inferable"

    def filter(self, entries: Sequence[MemoryEntry], *, query_text: str) -> list[MemoryEntry]:
        """Return the entries carrying the tag, in their original order."""
        return [e for e in entries if self.tag in e.metadata.tags]


@dataclass(frozen=True, slots=True, init=False)
class TagFilter:
    """Keep memories carrying every tag of ``require`` and none of ``exclude``.

    Raises (at construction):
        TypeError: ``require`` or ``exclude`` is a bare string.
        ValueError: a tag is empty, or a tag is both required and excluded.
    """

    require: frozenset[str]
    exclude: frozenset[str]

    def __init__(self, *, require: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        req = _clean_tags(require, "require")
        exc = _clean_tags(exclude, "exclude")
        if both := sorted(req & exc):
            msg = f"tags both required and excluded: {', '.join(both)}"
            raise ValueError(msg)
        object.__setattr__(self, "require", req)
        object.__setattr__(self, "exclude", exc)

    @property
    def name(self) -> str:
        """Short name of the strategy, used in logs."""
        return "tags"

    def filter(self, entries: Sequence[MemoryEntry], *, query_text: str) -> list[MemoryEntry]:
        """Return the entries passing the tag rules, in their original order."""
        return [
            e
            for e in entries
            if self.require.issubset(e.metadata.tags) and self.exclude.isdisjoint(e.metadata.tags)
        ]


def _strategy_name(strategy: object) -> str:
    try:
        name = getattr(strategy, "name", None)
    except Exception:  # a broken ``name`` property must not hide the original failure
        name = None
    return name if isinstance(name, str) else type(strategy).__name__


def apply_filter(
    strategy: MemoryFilterStrategy | None,
    entries: Sequence[MemoryEntry],
    *,
    query_text: str,
) -> list[MemoryEntry]:
    """Run ``strategy`` over ``entries``; no strategy keeps every entry.

    Fails closed: if the strategy raises, returns something other than a list of entries, or
    returns an entry that was not among its input, the failure is logged as
    ``memory.filter.failed`` (WARNING, with the traceback when there is one) and ``[]`` is
    returned. The unfiltered list is never returned, because a filter may be what keeps private
    or useless memories out of a prompt.
    """
    if strategy is None:
        return list(entries)
    if not entries:
        return []
    try:
        result = strategy.filter(entries, query_text=query_text)
    except Exception:
        # Broad on purpose: whatever went wrong inside a pluggable strategy, the answer is "no
        # memories", and the traceback goes to the log instead of failing the agent's turn.
        logger.warning(
            "memory.filter.failed",
            extra={"strategy": _strategy_name(strategy), "candidates": len(entries)},
            exc_info=True,
        )
        return []
    problem = _check_result(result, entries)
    if problem is not None:
        logger.warning(
            "memory.filter.failed",
            extra={
                "strategy": _strategy_name(strategy),
                "candidates": len(entries),
                "reason": problem,
            },
        )
        return []
    return list(result)


def _check_result(result: object, entries: Sequence[MemoryEntry]) -> str | None:
    if not isinstance(result, list | tuple):
        return f"filter returned {type(result).__name__}, not a list of entries"
    known = {e.id for e in entries}
    for item in result:
        if not isinstance(item, MemoryEntry):
            return f"filter returned a {type(item).__name__} among the entries"
        if item.id not in known:
            return f"filter returned entry {item.id!r} that was not a candidate"
    return None


def check_non_inferable_tag(
    request: MemoryStoreRequest, *, tag: str = NON_INFERABLE_TAG
) -> str | None:
    """Advise on a memory about to be stored without the non-inferable tag; never blocks.

    Returns a warning text for the caller to log (or show) when ``request`` lacks ``tag``, and
    None when it carries it. A store must go ahead either way: the tag convention is advisory
    (Decision Log D23).
    """
    if tag in request.metadata.tags:
        return None
    return (
        f"memory stored without the {tag!r} tag: a {tag} filter will keep it out of injected "
        f"context. Tag it {tag!r} if an agent could not infer it from the code or environment "
        "(design rationale, team decisions, 'why not X', conventions, cross-repo knowledge)."
    )
