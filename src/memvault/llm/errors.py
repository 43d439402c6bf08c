"""Errors raised by memvault's LLM provider layer.

They hang off memvault's own :class:`~memvault.errors.MemoryError`, so one ``except`` clause still
catches every failure memvault raises on purpose::

    MemoryError
    └── ProviderError              an LLM call failed; ``retryable`` says whether trying again
        │                          later may help (``status_code`` is the HTTP status, if any)
        ├── RetryExhaustedError    transient failures (timeouts, 429, 5xx, garbled bodies) kept
        │                          happening until the retry budget ran out; retryable=True
        ├── LLMOutputError         the model answered, but not with usable output (invalid JSON,
        │                          schema mismatch) even after a repair pass; retryable=False
        └── ProviderAuthError      the server rejected the credentials (HTTP 401/403);
                                   retryable=False

Callers that have a deterministic fallback (every LLM path in memvault does) can simply catch
``ProviderError``; ``retryable`` lets a scheduler decide whether to re-queue the job instead.
"""

from __future__ import annotations

from memvault.errors import MemoryError

__all__ = ["LLMOutputError", "ProviderAuthError", "ProviderError", "RetryExhaustedError"]


class ProviderError(MemoryError):
    """An LLM provider call failed.

    ``retryable`` is True when the same request may succeed later (the failure was transient);
    ``status_code`` is the HTTP status of the last response, or None when there was none.
    """

    def __init__(
        self, message: str, *, retryable: bool = False, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code


class RetryExhaustedError(ProviderError):
    """Transient failures persisted through every retry, so the provider gave up.

    It is always ``retryable``: nothing was wrong with the request itself, so trying again later
    (for example from a background queue) is reasonable. ``attempts`` counts the requests made.
    """

    def __init__(self, message: str, *, attempts: int = 0, status_code: int | None = None) -> None:
        super().__init__(message, retryable=True, status_code=status_code)
        self.attempts = attempts


class LLMOutputError(ProviderError):
    """The model's output could not be turned into the requested structure, even after repair.

    ``output`` holds the last raw text the model produced, for logs and debugging.
    """

    def __init__(self, message: str, *, output: str | None = None) -> None:
        super().__init__(message, retryable=False)
        self.output = output


class ProviderAuthError(ProviderError):
    """The provider rejected the credentials (HTTP 401 or 403); retrying will not help."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message, retryable=False, status_code=status_code)
