"""memvault: durable, typed, hybrid-search memory for LLM agents.

``Memory`` (sync) and ``AsyncMemory`` are the front door; ``memvault.errors`` holds the error
tree (its base is exported here as ``MemvaultError`` so it never shadows the builtin).
"""

# Imported for its effect: it registers the client that AsyncMemory("http://...") returns.
import memvault.remote  # noqa: F401
from memvault._version import __version__
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
