"""memvault: durable, typed, hybrid-search memory for LLM agents.

``Memory`` (sync) and ``AsyncMemory`` are the front door; ``memvault.errors`` holds the error
tree (its base is exported here as ``MemvaultError`` so it never shadows the builtin).

The public names load on first use (PEP 562 ``__getattr__``), so ``import memvault`` stays cheap
and a program pays only for what it touches; ``from memvault import X`` works for every name in
``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memvault._version import __version__

if TYPE_CHECKING:
    from memvault.config import MemvaultConfig, load_config
    from memvault.errors import (
        DimensionMismatchError,
        EmbedderUnavailableError,
        EmbeddingModelChangedError,
        MemoryAuthenticationError,
        MemoryCapabilityError,
        MemoryConfigError,
        MemoryConflictError,
        MemoryConnectionError,
        MemoryNotFoundError,
        MemoryPermissionError,
        MemoryRateLimitError,
        MemoryRetrievalError,
        MemoryStoreError,
        MemoryValidationError,
        MemvaultError,
    )
    from memvault.memory import AsyncMemory, Memory, WriteResult
    from memvault.models import (
        ConsolidationInterval,
        MemoryCategory,
        MemoryEntry,
        MemoryLevel,
        MemoryMetadata,
        MemoryQuery,
        MemoryScope,
        MemoryStoreRequest,
        ScoreBreakdown,
    )
    from memvault.retrieval.packing import MemoryContext

__all__ = [
    "AsyncMemory",
    "ConsolidationInterval",
    "DimensionMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingModelChangedError",
    "Memory",
    "MemoryAuthenticationError",
    "MemoryCapabilityError",
    "MemoryCategory",
    "MemoryConfigError",
    "MemoryConflictError",
    "MemoryConnectionError",
    "MemoryContext",
    "MemoryEntry",
    "MemoryLevel",
    "MemoryMetadata",
    "MemoryNotFoundError",
    "MemoryPermissionError",
    "MemoryQuery",
    "MemoryRateLimitError",
    "MemoryRetrievalError",
    "MemoryScope",
    "MemoryStoreError",
    "MemoryStoreRequest",
    "MemoryValidationError",
    "MemvaultConfig",
    "MemvaultError",
    "ScoreBreakdown",
    "WriteResult",
    "__version__",
    "load_config",
]

# Where each lazily loaded public name lives.
_ERRORS = (
    "DimensionMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingModelChangedError",
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
)
_MODELS = (
    "ConsolidationInterval",
    "MemoryCategory",
    "MemoryEntry",
    "MemoryLevel",
    "MemoryMetadata",
    "MemoryQuery",
    "MemoryScope",
    "MemoryStoreRequest",
    "ScoreBreakdown",
)
_HOMES: dict[str, str] = {
    **dict.fromkeys(_ERRORS, "memvault.errors"),
    **dict.fromkeys(_MODELS, "memvault.models"),
    "AsyncMemory": "memvault.memory",
    "Memory": "memvault.memory",
    "WriteResult": "memvault.memory",
    "MemvaultConfig": "memvault.config",
    "load_config": "memvault.config",
    "MemoryContext": "memvault.retrieval.packing",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    if not name.startswith("_"):
        # ``memvault.errors`` and the like after a bare ``import memvault``: the package no
        # longer imports its submodules, so an attribute that names one loads it.
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    msg = f"module 'memvault' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
