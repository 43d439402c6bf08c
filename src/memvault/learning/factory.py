"""Open the learning store for a memvault storage URL (the same URL the memories use)."""

from __future__ import annotations

from pathlib import Path

from memvault.errors import MemoryConfigError
from memvault.learning.store import InMemoryLearningStore, LearningStore

__all__ = ["open_learning_store"]


def open_learning_store(url: str, *, schema: str | None = None) -> LearningStore:
    """The learning store beside the memories at ``url``; nothing is opened until first use.

    A path or ``sqlite:///`` gives the ``learning_items`` table of that file, ``postgresql://``
    the one of the store's schema, ``memory://`` an in-process store.

    Raises:
        MemoryConfigError: an URL the learning layer cannot keep records in.
    """
    from memvault.backends.factory import parse_url, side_store_url

    kind, target = parse_url(side_store_url(url))
    if kind == "memory":
        return InMemoryLearningStore()
    if kind == "sqlite":
        from memvault.learning.sqlite import SQLiteLearningStore

        return SQLiteLearningStore(Path(target).expanduser())
    if kind == "postgresql":
        from memvault.learning.postgres import PostgresLearningStore

        return PostgresLearningStore(target, schema=schema)
    msg = (
        f"learning records cannot be stored in {url!r}: use a file path, sqlite://, "
        "postgresql:// or memory://"
    )
    raise MemoryConfigError(msg)
