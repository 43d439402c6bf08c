"""Value types and text helpers every part of a backend shares.

:data:`Vectors`, :class:`Supersede`, :data:`SHARED_KEY` and the texts an entry is embedded and
indexed by. They live apart from :class:`~memvault.backends._base.BaseBackend` so that its core
and its shared-knowledge/archive/audit mixin (:mod:`memvault.backends._side`) can both use them
without importing each other. :mod:`memvault.backends._base` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memvault.models import MemoryEntry

__all__ = ["SHARED_KEY", "Supersede", "Vectors", "embedding_text", "lexical_text"]

Vectors = NDArray[np.float32]


def embedding_text(entry: MemoryEntry) -> str:
    """The text a backend embeds for an entry (its content)."""
    return entry.content


def lexical_text(entry: MemoryEntry) -> str:
    """The text a backend indexes for BM25: the content plus the month and year it was created.

    Dates are how people recall events ("what did we ship in May 2023?"), so the human-readable
    date is indexed beside the words; it is analysed like any other text.
    """
    return f"{entry.content} {entry.created_at:%B %Y}"


SHARED_KEY = "\x00shared"
"""Key of the shared scope where backends keep per-scope state keyed by agent id (e.g. SQLite's
vector matrices). Agent ids cannot contain control characters, so it never names a real agent."""


@dataclass(frozen=True, slots=True)
class Supersede:
    """Mark ``old_id`` as replaced by ``new_id`` from ``when`` on (in the insert's transaction)."""

    old_id: str
    new_id: str
    when: datetime
