"""Value types and text helpers every part of a backend shares.

:data:`Vectors`, :class:`Supersede`, :data:`SHARED_KEY` and the texts an entry is embedded and
indexed by. They live apart from :class:`~memvault.backends._base.BaseBackend` so that its core
and its shared-knowledge/archive/audit mixin (:mod:`memvault.backends._side`) can both use them
without importing each other. :mod:`memvault.backends._base` re-exports them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memvault.errors import EmbedderUnavailableError, MemoryValidationError
from memvault.models import (
    MemoryEntry,
    MemoryQuery,
    MetadataFilter,
    json_metadata,
    parse_filters,
)
from memvault.retrieval.evidence import static_blob, static_vectors
from memvault.retrieval.text import index_text

__all__ = [
    "SCOPE_KEYS",
    "SHARED_KEY",
    "Supersede",
    "Vectors",
    "analysed_content",
    "analysed_from_counts",
    "check_filters",
    "embedding_text",
    "lexical_text",
    "metadata_json",
    "static_blobs",
    "with_filters",
]

logger = logging.getLogger("memvault.backends")

Vectors = NDArray[np.float32]


def embedding_text(entry: MemoryEntry) -> str:
    """The text a backend embeds for an entry (its content)."""
    return entry.content


def lexical_text(entry: MemoryEntry) -> str:
    """The text a backend indexes for BM25: the content plus the month and year it was created.

    Dates are how people recall events ("what did we ship in May 2023?"), so the human-readable
    date is indexed beside the words; it is analysed like any other text.
    """
    return f"{entry.content} {_month_year(entry.created_at)}"


def _month_year(when: datetime) -> str:
    return f"{when:%B %Y}"


@lru_cache(maxsize=1024)
def _analysed_date(month_year: str) -> str:
    return index_text(month_year)


def analysed_content(entry: MemoryEntry, indexed: str) -> str | None:
    """The analysed content of ``entry`` (``index_text(entry.content)``), given ``indexed``, the
    analysed :func:`lexical_text` a lexical index stored for it: that text minus the date terms
    it ends with. None when ``indexed`` does not end with the entry's date terms (a row indexed
    otherwise), so the caller analyses the content itself.
    """
    date = _analysed_date(_month_year(entry.created_at))
    if indexed == date:
        return ""
    if indexed.endswith(date) and indexed[-len(date) - 1 : -len(date)] == " ":
        return indexed[: -len(date) - 1]
    return None


def analysed_from_counts(entry: MemoryEntry, counts: Mapping[str, int]) -> str | None:
    """:func:`analysed_content` for an index that keeps term counts instead of the text (the
    terms in another order, each as often as it occurs): ``counts`` of the analysed
    :func:`lexical_text` minus one for each of its date terms. None when a date term is missing
    (a row indexed otherwise)."""
    left = dict(counts)
    for term in _analysed_date(_month_year(entry.created_at)).split():
        n = left.get(term, 0)
        if n < 1:
            return None
        left[term] = n - 1
    return " ".join(term for term, n in left.items() for _ in range(n))


SHARED_KEY = "\x00shared"
"""Key of the shared scope where backends keep per-scope state keyed by agent id (e.g. SQLite's
vector matrices). Agent ids cannot contain control characters, so it never names a real agent."""


@dataclass(frozen=True, slots=True)
class Supersede:
    """Mark ``old_id`` as replaced by ``new_id`` from ``when`` on (in the insert's transaction)."""

    old_id: str
    new_id: str
    when: datetime


SCOPE_KEYS: tuple[str, ...] = ("user_id", "session_id", "run_id", "namespace")
"""The scope keys of ``metadata.extra``: the SQL backends index them per agent (expression
indexes), so ``eq`` filters on them stay fast in big stores. Their SQL paths are literals of
this fixed list, never caller text."""


def metadata_json(extra: Mapping[str, Any]) -> str:
    """The stored text of ``metadata.extra``: strict JSON (no NaN), keys sorted.

    Entries built without validation (imports of old exports, rows of other stores) are checked
    here too, so every stored row is JSON every backend can filter.

    Raises:
        MemoryValidationError: a value that is not JSON, naming its key.
    """
    try:
        return json.dumps(json_metadata(extra), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryValidationError(str(exc)) from None


def check_filters(filters: Sequence[MetadataFilter]) -> tuple[MetadataFilter, ...]:
    """``filters`` as a tuple of :class:`MetadataFilter` (a mem0-style mapping is parsed).

    Raises:
        MemoryValidationError: an item that is not a MetadataFilter.
    """
    if not filters:
        return ()
    if isinstance(filters, Mapping):
        return parse_filters(filters)
    out = tuple(filters)
    for f in out:
        if not isinstance(f, MetadataFilter):
            msg = f"filters must be MetadataFilter objects, got {type(f).__name__}"
            raise MemoryValidationError(msg)
    return out


def with_filters(query: MemoryQuery, filters: Sequence[MetadataFilter]) -> MemoryQuery:
    """``query`` with ``filters`` added to its own (all AND together)."""
    extra = check_filters(filters)
    if not extra:
        return query
    return query.model_copy(update={"filters": (*query.filters, *extra)})


def static_blobs(texts: Sequence[str]) -> list[bytes] | None:
    """The static vectors of ``texts`` as stores keep them (little-endian float16 bytes, see
    ``CandidateSet.static``), or None when the static table cannot be loaded: a write never
    fails for derived data, and ranking computes what is not stored."""
    try:
        vectors = static_vectors(texts)
    except EmbedderUnavailableError as exc:
        logger.warning("store.static_vectors.unavailable error=%s", exc)
        return None
    return [static_blob(v) for v in vectors]
