"""The memvault error tree.

Every failure memvault raises on purpose is a :class:`MemoryError` (ours, not the builtin), so a
caller can catch the whole family with one ``except`` clause::

    MemoryError
    ├── MemoryConnectionError        backend unreachable, lost, or the file is not a store
    ├── MemoryStoreError             a store/delete/clear/import failed
    │   ├── MemoryValidationError    bad input: blank/huge/NUL content, naive datetime, bad id
    │   └── MemoryConflictError      the write contradicts the store's state (e.g. id taken)
    ├── MemoryRetrievalError         a retrieve/search/count/list failed
    ├── MemoryNotFoundError          a specific memory id does not exist (for this agent)
    ├── MemoryConfigError            configuration is invalid or a dependency is missing
    │   ├── EmbeddingModelChangedError   the store was built with another embedding model
    │   │   └── DimensionMismatchError   ... whose vectors have another dimension
    │   ├── EmbedderUnavailableError     the embedding model cannot be loaded (not installed)
    │   └── FineTuneDependencyError      fine-tuning needs ML packages that are not installed
    ├── MemoryCapabilityError        the backend does not support the operation
    ├── FineTuneCancelledError       an embedding fine-tune run was cancelled
    ├── MemoryAuthenticationError    no credentials, or an unknown/revoked API key
    └── MemoryPermissionError        the actor may not do this (scope, another agent's data)

The service layer maps the tree onto HTTP statuses in one table (``memvault.server.errors``):
not found 404, validation 422, conflict 409, authentication 401, permission 403, capability
501, connection 503.

``MemoryValidationError`` also derives from :class:`ValueError`, so generic input-validation
handlers keep working. Driver errors (``sqlite3``, ``psycopg``) never escape a backend: they are
translated into this tree at the boundary.

This module deliberately does not export a name ``MemoryError`` through ``*`` imports (it has no
``__all__`` entry for star-imports that would shadow the builtin in user code); import it as
``from memvault.errors import MemoryError`` or use ``memvault.MemvaultError``.
"""

from __future__ import annotations

__all__ = [
    "DimensionMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingModelChangedError",
    "FineTuneCancelledError",
    "FineTuneDependencyError",
    "LLMNotConfiguredError",
    "MemoryAuthenticationError",
    "MemoryCapabilityError",
    "MemoryConfigError",
    "MemoryConflictError",
    "MemoryConnectionError",
    "MemoryNotFoundError",
    "MemoryPermissionError",
    "MemoryRateLimitError",
    "MemoryRetrievalError",
    "MemoryStoreError",
    "MemoryValidationError",
    "MemvaultError",
]


class MemoryError(Exception):
    """Base class of every error memvault raises on purpose."""


# An alias that cannot be confused with ``builtins.MemoryError`` when imported unqualified.
MemvaultError = MemoryError


class MemoryConnectionError(MemoryError):
    """The backend cannot be reached, was lost, or the target is not a memvault store."""


class MemoryStoreError(MemoryError):
    """A write (store, delete, clear, import) failed; nothing was half-written."""


class MemoryValidationError(MemoryStoreError, ValueError):
    """Input was rejected before it reached the store (the store is unchanged)."""


class MemoryRetrievalError(MemoryError):
    """A read (retrieve, search, get, count, list, export) failed."""


class MemoryNotFoundError(MemoryError):
    """A memory id does not exist, or belongs to another agent (the two are indistinguishable)."""


class MemoryConfigError(MemoryError):
    """The configuration is invalid or an optional dependency is missing."""


class EmbeddingModelChangedError(MemoryConfigError):
    """The store was built with a different embedding model than the one configured now.

    Run ``memvault reindex`` to re-embed every memory with the new model, or configure the
    model the store was built with.
    """

    def __init__(self, message: str, *, stored_model: str, configured_model: str) -> None:
        super().__init__(message)
        self.stored_model = stored_model
        self.configured_model = configured_model


class DimensionMismatchError(EmbeddingModelChangedError):
    """The configured embedder produces vectors of another dimension than the store holds."""

    def __init__(
        self,
        message: str,
        *,
        stored_model: str,
        configured_model: str,
        stored_dimension: int,
        configured_dimension: int,
    ) -> None:
        super().__init__(message, stored_model=stored_model, configured_model=configured_model)
        self.stored_dimension = stored_dimension
        self.configured_dimension = configured_dimension


class EmbedderUnavailableError(MemoryConfigError):
    """The embedding model cannot be loaded (package missing or files unreadable)."""


class FineTuneDependencyError(MemoryConfigError):
    """Embedding fine-tuning needs ML packages (torch) that are not installed.

    ``install_command`` holds the exact command that fixes it, also quoted in the message.
    """

    def __init__(self, message: str, *, missing: str, install_command: str) -> None:
        super().__init__(message)
        self.missing = missing
        self.install_command = install_command


class FineTuneCancelledError(MemoryError):
    """An embedding fine-tune run was cancelled; its finished stages stay on disk for resume."""

    def __init__(self, message: str, *, run_id: str, stage: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.stage = stage


class LLMNotConfiguredError(MemoryConfigError):
    """The request needs an LLM and none is configured (``llm:`` or ``MEMVAULT_LLM_BASE_URL``)."""


class MemoryCapabilityError(MemoryError):
    """The backend does not support the requested operation."""


class MemoryConflictError(MemoryStoreError):
    """The write conflicts with what the store holds (an id already taken, a stale update)."""


class MemoryAuthenticationError(MemoryError):
    """The caller presented no credentials, or an unknown or revoked API key."""


class MemoryPermissionError(MemoryError):
    """The caller is known but may not do this: a missing scope, or another agent's memories."""


class MemoryRateLimitError(MemoryError):
    """The caller (or its tenant) sent more requests than its limit allows; retry later."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
