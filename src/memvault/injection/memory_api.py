"""``MemoryAPI``: the part of :class:`~memvault.AsyncMemory` the agent-side features use.

The memory tools (:mod:`memvault.agent.memory_tools`), the capture helpers
(:mod:`memvault.agent.capture`) and the tool-based and self-editing injection strategies work
over any object with these seven methods; :class:`~memvault.AsyncMemory` (and so
``RemoteAsyncMemory``) has them. Typing them against this protocol instead of ``AsyncMemory``
keeps :mod:`memvault.memory`, which offers those features, above them: nothing under
``agent/`` or ``injection/`` imports ``memory.py``.

The signatures are copied from ``AsyncMemory`` (default values included); mypy checks that
``AsyncMemory`` still matches wherever ``memory.py`` hands itself to one of these features.

The protocol lives here rather than in :mod:`memvault.protocols` because ``write`` returns a
:class:`~memvault.write.executor.WriteOutcome`: ``protocols`` sits below ``write`` (which
imports it), so typing it against ``write`` would be an upward edge and a cycle.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memvault.models import MemoryCategory, MemoryEntry

if TYPE_CHECKING:
    from memvault.retrieval.presets import RetrievalConfig
    from memvault.write.executor import WriteOutcome

__all__ = ["CategoryLike", "MemoryAPI"]

CategoryLike = MemoryCategory | str
"""A category, as the enum or its value (``"semantic"``); same as ``memory.CategoryLike``."""


class MemoryAPI(Protocol):
    """Store, read, search, count and archive one agent's memories (see ``AsyncMemory``)."""

    async def add(
        self,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
    ) -> str:
        """Store one memory for ``agent_id``; its id (``""`` when admission rejects it)."""
        ...

    async def write(
        self,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
    ) -> WriteOutcome:
        """Like :meth:`add`, but report what the write did (stored, confirmed, superseded...)."""
        ...

    async def archive(
        self, ids: Sequence[str], *, agent_id: str, reason: str = "archive"
    ) -> dict[str, str]:
        """Move memories to the archive; returns original id -> archive id (unknown ids omitted)."""
        ...

    async def search(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        include_shared: bool = False,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        preset: str | RetrievalConfig | None = None,
        explain: bool = False,
    ) -> builtins.list[MemoryEntry]:
        """Hybrid search of the agent's memories, best first, ``relevance_score`` set."""
        ...

    async def get(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """One memory of the agent (``MemoryNotFoundError`` if it has none with that id)."""
        ...

    async def count(self, *, agent_id: str, category: CategoryLike | None = None) -> int:
        """Number of memories of the agent (of one category)."""
        ...

    async def list(
        self,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        label: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        include_superseded: bool = False,
    ) -> builtins.list[MemoryEntry]:
        """The agent's memories, newest first, filtered by category, label and tags."""
        ...
