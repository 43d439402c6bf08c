"""The one table that maps memvault errors onto wire codes and HTTP statuses.

REST responses and MCP tool errors both use it, so a client sees the same ``code`` for the
same failure whichever interface it speaks. The most specific class wins (the table is walked
along the exception's MRO), and anything that is not a memvault error is an internal error whose
details stay in the server log, never in a response.
"""

from __future__ import annotations

from memvault.errors import (
    EmbeddingModelChangedError,
    FineTuneCancelledError,
    FineTuneDependencyError,
    LLMNotConfiguredError,
    MemoryAuthenticationError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryConnectionError,
    MemoryError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryRateLimitError,
    MemoryRetrievalError,
    MemoryStoreError,
    MemoryValidationError,
)

__all__ = ["ERROR_TABLE", "INTERNAL", "error_code", "error_status", "public_message"]

#: exception class -> (code, HTTP status)
ERROR_TABLE: dict[type[MemoryError], tuple[str, int]] = {
    MemoryNotFoundError: ("not_found", 404),
    MemoryValidationError: ("validation_error", 422),
    MemoryConflictError: ("conflict", 409),
    MemoryAuthenticationError: ("unauthenticated", 401),
    MemoryPermissionError: ("permission_denied", 403),
    MemoryRateLimitError: ("rate_limited", 429),
    MemoryCapabilityError: ("not_supported", 501),
    MemoryConnectionError: ("backend_unavailable", 503),
    EmbeddingModelChangedError: ("embedding_model_changed", 503),
    # A subclass of MemoryConfigError, but the fix is on the caller's side (install the extra
    # the message names), so it is a 501 whose message reaches the client.
    FineTuneDependencyError: ("fine_tune_dependency_missing", 501),
    FineTuneCancelledError: ("cancelled", 409),
    # A MemoryConfigError too (the library's callers catch that), but for a client it is a
    # request this server cannot serve as asked: 422 with the message, not a 500.
    LLMNotConfiguredError: ("llm_not_configured", 422),
    MemoryConfigError: ("configuration_error", 500),
    MemoryStoreError: ("store_failed", 500),
    MemoryRetrievalError: ("retrieval_failed", 500),
    MemoryError: ("memvault_error", 500),
}

INTERNAL = ("internal_error", 500)


def _lookup(exc: BaseException) -> tuple[str, int]:
    for cls in type(exc).__mro__:
        found = ERROR_TABLE.get(cls)
        if found is not None:
            return found
    return INTERNAL


def error_code(exc: BaseException) -> str:
    """The wire code of ``exc`` (``internal_error`` for anything that is not ours)."""
    return _lookup(exc)[0]


def error_status(exc: BaseException) -> int:
    """The HTTP status of ``exc`` (500 for anything that is not ours)."""
    return _lookup(exc)[1]


# What a client is told about a server-side failure: its details (paths, driver messages) stay in
# the server log. 501 keeps its message: it says what the deployment cannot do, which the caller
# needs to know.
_PUBLIC = {
    "backend_unavailable": "the memory store is unavailable; try again later",
    "embedding_model_changed": "the store was built with another embedding model than the server's",
    "configuration_error": "the server is misconfigured",
    "store_failed": "the memory store could not complete the write",
    "retrieval_failed": "the memory store could not complete the read",
    "memvault_error": "the memory service failed",
    "internal_error": "internal server error",
}


def public_message(exc: BaseException) -> str:
    """The message a client may see for ``exc``: its own for client errors, generic for 5xx."""
    code, status = _lookup(exc)
    if status < 500 or status == 501:
        return str(exc)
    return _PUBLIC.get(code, _PUBLIC["internal_error"])
