"""The features a memory attaches: learning, the entity graph, conversations.

Each is opened on first use by its own package's opener (:func:`memvault.graph.memory.
open_graph_memory`, :func:`memvault.conversation.memory.open_conversation_memory`,
:func:`memvault.learning.engine.open_learning`), which gets what it needs from the memory as
plain arguments: the configuration, the LLM, the URL of the side tables beside the memories.
:class:`Extensions` keeps what was opened for the memory's lifetime and closes it with the
memory, last opened first. A feature that is never asked for is never imported.

Fine-tuning and maintenance are applications over a memory (they take one; a memory does not
carry them), so they sit above :mod:`memvault.memory` and are not attached here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar, cast

__all__ = ["Extension", "Extensions"]


class Extension(Protocol):
    """What a memory attaches: something it closes when it closes."""

    async def close(self) -> None:
        """Release what the feature holds (its side tables, queues)."""
        ...


E = TypeVar("E", bound=Extension)


class Extensions:
    """The features attached to one memory, by name, each opened once on first use."""

    def __init__(self) -> None:
        self._open: dict[str, Extension] = {}

    def get(self, name: str, opener: Callable[[], E]) -> E:
        """The feature ``name``, opened by ``opener`` the first time it is asked for."""
        found = self._open.get(name)
        if found is None:
            found = self._open[name] = opener()
        return cast("E", found)

    def opened(self, name: str) -> bool:
        """True once ``name`` was opened (and not yet closed)."""
        return name in self._open

    async def close(self) -> None:
        """Close every opened feature, last opened first; each is closed even if one fails."""
        failure: BaseException | None = None
        while self._open:
            _, feature = self._open.popitem()
            try:
                await feature.close()
            except Exception as exc:  # the others still close; the first failure is raised
                failure = failure or exc
        if failure is not None:
            raise failure
