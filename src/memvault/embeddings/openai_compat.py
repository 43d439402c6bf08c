"""An embedder for any server speaking the OpenAI ``POST /embeddings`` API.

That covers OpenAI itself and the many self-hosted servers that copy its format (vLLM, Ollama,
LiteLLM, text-embeddings-inference, LM Studio ...). Requests are batched, transient failures
(timeouts, dropped connections, 429 and 5xx) are retried with exponential backoff, and every
failure surfaces as a memvault error: unreachable or misbehaving servers as
:class:`~memvault.errors.MemoryConnectionError`, rejected credentials or requests as
:class:`~memvault.errors.MemoryConfigError`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random_exponential,
)

from memvault.embeddings._base import DEFAULT_QUERY_CACHE_SIZE, QueryCache, check_texts
from memvault.errors import EmbedderUnavailableError, MemoryConfigError, MemoryConnectionError

__all__ = ["OpenAICompatibleEmbedder"]

logger = logging.getLogger(__name__)

_MAX_BACKOFF_SECONDS = 30.0
_DETAIL_CHARS = 300
_PROBE_TEXT = "dimension probe"


class OpenAICompatibleEmbedder:
    """Embeds text through an OpenAI-compatible ``{base_url}/embeddings`` endpoint.

    The API key is ``api_key`` or, failing that, the environment variable ``api_key_env``; with
    neither, no ``Authorization`` header is sent (local servers usually need none). When
    ``dimension`` is not given it is learned from the first response (reading the
    :attr:`dimension` property before any embedding sends one small probe request). Vectors are
    L2-normalised float32 whatever the server returns. Thread-safe; call :meth:`close` (or use
    it as a context manager) to release the connection pool.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        backoff: float = 0.5,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Validate settings; no connection is opened until the first request.

        ``backoff`` is the delay before the first retry in seconds; it doubles on each further
        retry (with a little jitter) and is capped at 30 s. ``max_retries`` counts retries, so
        a request is attempted at most ``max_retries + 1`` times.
        """
        base = base_url.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise MemoryConfigError(
                f"embeddings base_url must start with http:// or https://, got {base_url!r}"
            )
        if not model.strip():
            raise MemoryConfigError("embeddings model name must not be empty")
        if dimension is not None and dimension < 1:
            raise MemoryConfigError(f"dimension must be >= 1, got {dimension}")
        if timeout <= 0:
            raise MemoryConfigError(f"timeout must be > 0, got {timeout}")
        if max_retries < 0:
            raise MemoryConfigError(f"max_retries must be >= 0, got {max_retries}")
        if batch_size < 1:
            raise MemoryConfigError(f"batch_size must be >= 1, got {batch_size}")
        if backoff < 0:
            raise MemoryConfigError(f"backoff must be >= 0, got {backoff}")
        self._url = f"{base}/embeddings"
        self._model = model
        self._api_key_env = api_key_env
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env) or None
        self._dimension = dimension
        self._timeout = timeout
        self._max_retries = max_retries
        self._batch_size = batch_size
        # backoff * 2**(retry - 1), plus uniform jitter up to a quarter of that.
        self._backoff_wait = wait_exponential(multiplier=backoff) + wait_random_exponential(
            multiplier=backoff / 4
        )
        self._extra_headers = dict(headers or {})
        self._query_cache: QueryCache[str] = QueryCache(query_cache_size)
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The model id, ``openai-compat:{model}``."""
        return f"openai-compat:{self._model}"

    @property
    def url(self) -> str:
        """The full URL requests are sent to."""
        return self._url

    @property
    def dimension(self) -> int:
        """Length of the returned vectors; may send one probe request to learn it."""
        if self._dimension is None:
            self._request([_PROBE_TEXT])
        assert self._dimension is not None  # set by _request on success
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages; returns unit-length float32 vectors of shape ``(len(texts), dim)``.

        Texts are sent in batches of ``batch_size``; rows are in input order.
        """
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query; returns a unit-length float32 vector (cached; always a fresh copy)."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects str, got {type(text).__name__}")
        cached = self._query_cache.get(text)
        if cached is not None:
            return cached
        vector: NDArray[np.float32] = self._request([text])[0]
        self._query_cache.put(text, vector)
        return vector

    def close(self) -> None:
        """Close the HTTP connection pool (idempotent; a later call opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        """Return self; :meth:`close` runs on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the connection pool."""
        self.close()

    def __repr__(self) -> str:
        """Show endpoint and model, never the key."""
        return f"OpenAICompatibleEmbedder(url={self._url!r}, model={self._model!r})"

    # -- internals ---------------------------------------------------------------------------

    def _get_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"User-Agent": "memvault", **self._extra_headers}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                # Redirects are not followed: a POST redirected to a GET login page would come
                # back as a confusing "malformed JSON" instead of the real misconfiguration.
                self._client = httpx.Client(
                    timeout=self._timeout, headers=headers, follow_redirects=False
                )
            return self._client

    def _request(self, batch: list[str]) -> NDArray[np.float32]:
        # Many servers (OpenAI included) reject empty strings in "input"; a single space embeds
        # as "no content" everywhere.
        payload = {"model": self._model, "input": [t if t else " " for t in batch]}
        attempts = self._max_retries + 1
        retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_TransientError),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            return retrying(self._attempt, payload, len(batch))
        except _TransientError as exc:
            raise MemoryConnectionError(
                f"embedding request to {self._url} failed after {attempts} attempt(s): {exc}"
            ) from exc.__cause__

    def _attempt(self, payload: dict[str, Any], expected: int) -> NDArray[np.float32]:
        """One request: the vectors, :class:`_TransientError` (retried) or a final error."""
        try:
            response = self._get_client().post(self._url, json=payload)
        except httpx.UnsupportedProtocol as exc:
            raise MemoryConfigError(f"invalid embeddings URL {self._url}: {exc}") from exc
        except httpx.TimeoutException as exc:
            reason = f"timed out after {self._timeout:g}s ({type(exc).__name__})"
            raise _TransientError(reason) from exc
        except httpx.TransportError as exc:
            raise _TransientError(f"connection error: {exc or type(exc).__name__}") from exc
        status = response.status_code
        if 200 <= status < 300:
            return self._parse(response, expected)
        if status == 429 or status >= 500:
            reason = f"HTTP {status}: {_detail(response)}"
            raise _TransientError(reason, retry_after=_retry_after(response))
        raise self._client_error(response)

    def _wait(self, state: RetryCallState) -> float:
        """``backoff`` doubled per retry, up to 25% jitter, at least ``Retry-After``; <= 30 s."""
        wait = self._backoff_wait(state)
        failure = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failure, _TransientError) and failure.retry_after is not None:
            wait = max(wait, failure.retry_after)
        return min(_MAX_BACKOFF_SECONDS, wait)

    def _log_retry(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        logger.warning(
            "embedder.retry url=%s attempt=%d/%d reason=%s wait_seconds=%.2f",
            self._url,
            state.attempt_number,
            self._max_retries + 1,
            failure,
            state.next_action.sleep if state.next_action is not None else 0.0,
        )

    def _client_error(self, response: httpx.Response) -> MemoryConfigError:
        status = response.status_code
        detail = _detail(response)
        if status in (401, 403):
            if self._api_key:
                hint = f"check the API key (from api_key= or ${self._api_key_env})"
            else:
                hint = f"no API key was sent: set ${self._api_key_env} or pass api_key="
            return MemoryConfigError(
                f"the embeddings endpoint {self._url} refused the credentials "
                f"(HTTP {status}): {detail}; {hint}"
            )
        if status == 404:
            return MemoryConfigError(
                f"the embeddings endpoint {self._url} was not found (HTTP 404): {detail}; check "
                f"the base URL and that model {self._model!r} exists"
            )
        return MemoryConfigError(
            f"the embeddings endpoint {self._url} rejected the request (HTTP {status}): {detail}"
        )

    def _parse(self, response: httpx.Response, expected: int) -> NDArray[np.float32]:
        try:
            body = response.json()
            data = body["data"]
            if not isinstance(data, list) or len(data) != expected:
                got = len(data) if isinstance(data, list) else type(data).__name__
                raise ValueError(f"expected {expected} embeddings, got {got}")
            indexed: dict[int, Any] = {}
            for item in data:
                index = item["index"]
                if not isinstance(index, int) or not 0 <= index < expected or index in indexed:
                    raise ValueError(f"bad or duplicate index {index!r}")
                indexed[index] = item["embedding"]
            matrix = np.array([indexed[i] for i in range(expected)], dtype=np.float64)
        except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise MemoryConnectionError(
                f"malformed response from the embeddings endpoint {self._url}: {exc}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise MemoryConnectionError(
                f"malformed response from the embeddings endpoint {self._url}: embeddings are "
                "not equal-length lists of finite numbers"
            )
        self._check_dimension(matrix.shape[1])
        norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(matrix / norms, dtype=np.float32)

    def _check_dimension(self, got: int) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = got
                return
            expected = self._dimension
        if got != expected:
            # Vectors of another length cannot share an index with earlier ones: the server is
            # serving a different model than configured (or than a moment ago).
            raise EmbedderUnavailableError(
                f"the embeddings endpoint {self._url} returned {got}-dimensional vectors for "
                f"model {self._model!r}, expected {expected}"
            )


class _TransientError(Exception):
    """Internal: this attempt failed in a way worth retrying (the message is the reason)."""

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def _detail(response: httpx.Response) -> str:
    """The error message of an API error body (OpenAI's ``{"error": {"message"}}``) or its text."""
    try:
        body = response.json()
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return str(error["message"])[:_DETAIL_CHARS]
            if isinstance(error, str):
                return error[:_DETAIL_CHARS]
    except ValueError:
        pass
    text = response.text.strip()
    return text[:_DETAIL_CHARS] if text else response.reason_phrase or "no details"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:  # an HTTP date; the exponential backoff is good enough then
        return None
