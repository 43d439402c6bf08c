"""An LLM provider for any server that speaks the OpenAI chat-completions API.

That covers OpenAI itself and the usual local servers (Ollama, vLLM, llama.cpp's ``llama-server``),
whose support for structured output differs; the client therefore degrades ``response_format``
step by step when a server rejects it and remembers what worked.
"""

from __future__ import annotations

import asyncio
import copy
import email.utils
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random_exponential,
)

from memvault.errors import MemoryConfigError
from memvault.llm._protocol import ChatMessage, LLMResponse
from memvault.llm.errors import ProviderAuthError, ProviderError, RetryExhaustedError

__all__ = ["OpenAICompatibleLLM"]

logger = logging.getLogger(__name__)

_ResponseFormatMode = Literal["json_schema", "json_object", "none"]
# The order in which structured output is degraded for servers that reject the stronger form.
_DOWNGRADE: dict[_ResponseFormatMode, _ResponseFormatMode] = {
    "json_schema": "json_object",
    "json_object": "none",
}
_RANK: dict[_ResponseFormatMode, int] = {"json_schema": 2, "json_object": 1, "none": 0}
# 408 is a server-side request timeout, so it is as transient as the 429/5xx family.
_RETRYABLE_STATUS = frozenset({408, 429})
_MAX_ERROR_CHARS = 500
# A 400 whose message mentions one of these is taken as "this server cannot do that
# response_format" (the wording differs between OpenAI, vLLM, llama.cpp and Ollama).
_FORMAT_KEYWORDS = ("response_format", "json_schema", "json_object")


def _retry_after_seconds(headers: httpx.Headers) -> float | None:
    """Return the delay a 429/503 response asks for, or None when it gives none.

    OpenAI also sends ``retry-after-ms``; the standard ``Retry-After`` may be delta-seconds or an
    HTTP date.
    """
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(response: httpx.Response) -> str:
    """Extract the human-readable error a server sent, whatever dialect it speaks."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message: Any = None
    if isinstance(body, dict):
        # OpenAI/vLLM: {"error": {"message": ...}}; Ollama: {"error": "..."}; FastAPI: "detail".
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        message = message or body.get("message") or body.get("detail")
    if not message:
        message = response.text.strip() or response.reason_phrase
    text = message if isinstance(message, str) else json.dumps(message)
    return text[:_MAX_ERROR_CHARS]


def _content_text(content: Any) -> str | None:
    """Return the text of a message ``content``, or None if it has an unexpected shape.

    Some servers return content as a list of typed parts; ``null`` content (a refusal, for
    instance) is an empty answer rather than a broken response.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "".join(parts)
    return None


def _token_count(usage: Any, key: str) -> int:
    """Read a token count from a ``usage`` object, treating anything odd as 0."""
    if not isinstance(usage, dict):
        return 0
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class _TransientError(Exception):
    """Internal marker: this attempt failed in a way worth retrying."""

    def __init__(
        self, reason: str, *, status_code: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status_code = status_code
        self.retry_after = retry_after


class _ResponseFormatRejected(Exception):
    """Internal marker: the server answered 400 because of ``response_format``."""


class OpenAICompatibleLLM:
    """Talks to an OpenAI-compatible ``/chat/completions`` endpoint over HTTP.

    ``base_url`` includes the API version prefix, e.g. ``https://api.openai.com/v1`` or
    ``http://localhost:11434/v1`` (Ollama). The API key is ``api_key`` if given, else the
    environment variable ``api_key_env``; when neither is set no ``Authorization`` header is sent,
    which is what local servers expect.

    Transient failures (timeouts, connection errors, 408/429/5xx, garbled bodies) are retried up to
    ``max_retries`` times with exponential backoff and jitter, honouring ``Retry-After`` up to
    ``max_backoff`` seconds; then :class:`RetryExhaustedError` is raised. 401/403 raise
    :class:`ProviderAuthError`; other 4xx raise a non-retryable :class:`ProviderError` carrying the
    server's message.

    When a JSON schema is requested the client first sends ``response_format`` of type
    ``json_schema``; if the server rejects that with a 400 it falls back to ``json_object`` and
    then to no ``response_format``, and keeps the downgrade for later calls.

    ``sleep`` is the coroutine function that waits between retries (default
    :func:`asyncio.sleep`); it gets the delay in seconds, so a test can record the delays instead
    of waiting them out.

    Use it as an async context manager or call :meth:`aclose` to release connections.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        extra_headers: Mapping[str, str] | None = None,
        max_backoff: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not base_url:
            raise MemoryConfigError("base_url must not be empty")
        if not model:
            raise MemoryConfigError("model must not be empty")
        if timeout <= 0:
            raise MemoryConfigError(f"timeout must be > 0, got {timeout}")
        if max_retries < 0:
            raise MemoryConfigError(f"max_retries must be >= 0, got {max_retries}")
        if backoff_base < 0 or max_backoff < 0:
            raise MemoryConfigError("backoff_base and max_backoff must be >= 0")
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/chat/completions"
        self._model = model
        # An empty variable counts as unset so that `OPENAI_API_KEY= memvault ...` works locally.
        self._api_key = api_key or os.environ.get(api_key_env) or None
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff_base = backoff_base
        self._max_backoff = max_backoff
        self._sleep = sleep
        # Equal jitter: c/2 + uniform(0, c/2), c = min(backoff_base * 2**(retry - 1), max_backoff).
        half_base, half_max = backoff_base / 2, max_backoff / 2
        self._equal_jitter = wait_exponential(
            multiplier=half_base, max=half_max
        ) + wait_random_exponential(multiplier=half_base, max=half_max)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if extra_headers:
            self._headers.update(extra_headers)
        if self._api_key:
            self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._response_format_mode: _ResponseFormatMode = "json_schema"
        # Created lazily so that constructing a provider (e.g. from config) costs nothing and a
        # closed provider can transparently reconnect.
        self._client: httpx.AsyncClient | None = None
        # A provider made by with_model() sends through its origin's connections.
        self._origin: OpenAICompatibleLLM | None = None

    def with_model(self, model: str) -> OpenAICompatibleLLM:
        """The same endpoint, key and retry policy asking ``model`` (connections shared).

        What ``consolidation.model_override``, ``dual_mode.summarization_model`` and
        ``procedural.model`` use to send their calls to another model of one endpoint.
        """
        if not model:
            raise MemoryConfigError("model must not be empty")
        if model == self._model:
            return self
        twin = copy.copy(self)
        twin._model = model
        twin._client = None
        twin._origin = self._origin or self
        return twin

    def __repr__(self) -> str:
        """Show the endpoint and model, never the API key."""
        return f"OpenAICompatibleLLM(base_url={self._base_url!r}, model={self._model!r})"

    @property
    def model_id(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def response_format_mode(self) -> str:
        """The structured-output mode in use: ``json_schema``, ``json_object`` or ``none``."""
        return self._response_format_mode

    async def __aenter__(self) -> Self:
        """Return the provider itself; connections are opened on first use."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the HTTP connections."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent; a later call reconnects)."""
        if self._origin is not None:
            return  # the origin's connections: closed with it
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _get_client(self) -> httpx.AsyncClient:
        if self._origin is not None:
            return self._origin._get_client()
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout), headers=self._headers
            )
        return self._client

    def _redact(self, text: str) -> str:
        """Remove the API key from text that may end up in logs or exception messages."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def _payload(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        max_tokens: int | None,
        json_schema: dict[str, Any] | None,
        mode: _ResponseFormatMode,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [m.model_dump(exclude_none=True) for m in messages],
            "temperature": temperature,
            "stream": False,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if json_schema is not None and mode == "json_schema":
            # strict=False: strict mode demands a restricted schema dialect (every property
            # required, additionalProperties false) that ordinary pydantic schemas do not meet.
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": json_schema, "strict": False},
            }
        elif json_schema is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        return payload

    def _wait(self, state: RetryCallState) -> float:
        """The delay before the next attempt: ``Retry-After`` if the server sent one (capped).

        Otherwise "equal jitter": half the capped exponential delay plus a random part up to the
        other half, so clients that failed together spread out without any of them retrying
        immediately.
        """
        failure = state.outcome.exception() if state.outcome is not None else None
        retry_after = failure.retry_after if isinstance(failure, _TransientError) else None
        if retry_after is not None:
            return min(retry_after, self._max_backoff)
        return float(self._equal_jitter(state))

    def _log_retry(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        assert isinstance(failure, _TransientError)  # the only exception that is retried
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "llm.retry model=%s attempt=%d reason=%s delay=%.3fs",
            self._model,
            state.attempt_number,
            self._redact(failure.reason),
            delay,
            extra={
                "event": "llm.retry",
                "model": self._model,
                "attempt": state.attempt_number,
                "status_code": failure.status_code,
                "delay": delay,
            },
        )

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """Send ``messages`` to ``{base_url}/chat/completions`` and return the first choice.

        Raises:
            RetryExhaustedError: transient failures persisted through every retry.
            ProviderAuthError: the server answered 401 or 403.
            ProviderError: any other client error (4xx) or an unusable request.
        """
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_TransientError),
            before_sleep=self._log_retry,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._complete_once(
                        messages,
                        temperature,
                        max_tokens,
                        json_schema,
                        attempt=attempt.retry_state.attempt_number,
                    )
        except _TransientError as exc:
            attempts = self._max_retries + 1
            message = self._redact(
                f"{self._model} at {self._url} failed after {attempts} attempt(s): {exc.reason}"
            )
            self._log_failed(message, exc.status_code)
            raise RetryExhaustedError(
                message, attempts=attempts, status_code=exc.status_code
            ) from exc.__cause__
        except ProviderError as exc:
            self._log_failed(str(exc), exc.status_code)
            raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _complete_once(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        max_tokens: int | None,
        json_schema: dict[str, Any] | None,
        *,
        attempt: int,
    ) -> LLMResponse:
        """One attempt, with as many structured-output downgrades as the server asks for.

        A downgrade is not a transient failure, so it does not use up a retry; it can happen at
        most twice, which bounds the loop.
        """
        while True:
            mode = self._response_format_mode
            payload = self._payload(messages, temperature, max_tokens, json_schema, mode)
            logger.debug(
                "llm.request model=%s url=%s attempt=%d messages=%d response_format=%s",
                self._model,
                self._url,
                attempt,
                len(messages),
                mode if json_schema is not None else "-",
                extra={"event": "llm.request", "model": self._model, "attempt": attempt},
            )
            try:
                return await self._attempt(payload, send_format="response_format" in payload)
            except _ResponseFormatRejected as exc:
                self._downgrade(mode, str(exc))

    def _downgrade(self, used: _ResponseFormatMode, reason: str) -> None:
        """Step structured output down one level, never above what another call already chose."""
        target = _DOWNGRADE[used]
        if _RANK[target] < _RANK[self._response_format_mode]:
            self._response_format_mode = target
        logger.info(
            "llm.downgrade model=%s response_format %s -> %s: %s",
            self._model,
            used,
            target,
            self._redact(reason),
            extra={"event": "llm.downgrade", "model": self._model, "response_format": target},
        )

    def _log_failed(self, message: str, status_code: int | None) -> None:
        logger.warning(
            "llm.failed model=%s status=%s: %s",
            self._model,
            status_code,
            message,
            extra={"event": "llm.failed", "model": self._model, "status_code": status_code},
        )

    async def _attempt(self, payload: dict[str, Any], *, send_format: bool) -> LLMResponse:
        """Make one HTTP request and classify its outcome.

        Returns the parsed response, or raises ``_TransientError`` (retry),
        ``_ResponseFormatRejected`` (downgrade) or a final :class:`ProviderError`.
        """
        try:
            response = await self._get_client().post(self._url, json=payload)
        except httpx.TimeoutException as exc:
            raise _TransientError(f"timed out after {self._timeout}s ({exc!r})") from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            raise _TransientError(f"connection failed: {exc!r}") from exc
        except httpx.HTTPError as exc:
            # Invalid URL, unsupported scheme and the like: retrying cannot fix the request.
            raise ProviderError(self._redact(f"request to {self._url} failed: {exc!r}")) from exc

        status = response.status_code
        if status in (401, 403):
            raise ProviderAuthError(
                self._redact(f"{self._url} rejected the credentials ({status}): ")
                + self._redact(_error_message(response)),
                status_code=status,
            )
        if status in _RETRYABLE_STATUS or status >= 500:
            raise _TransientError(
                f"HTTP {status}: {_error_message(response)}",
                status_code=status,
                retry_after=_retry_after_seconds(response.headers),
            )
        if status >= 400:
            message = _error_message(response)
            lowered = message.lower()
            if status == 400 and send_format and any(k in lowered for k in _FORMAT_KEYWORDS):
                raise _ResponseFormatRejected(message)
            raise ProviderError(
                self._redact(f"{self._url} answered HTTP {status}: {message}"),
                status_code=status,
            )
        return self._parse(response)

    def _parse(self, response: httpx.Response) -> LLMResponse:
        """Turn a 2xx body into an :class:`LLMResponse`; a garbled body is a transient failure.

        Proxies and overloaded servers occasionally return truncated or HTML bodies with a 200, so
        such a body is retried rather than reported as a bug.
        """
        status = response.status_code
        try:
            body = response.json()
        except ValueError as exc:
            raise _TransientError(
                f"HTTP {status} with a body that is not JSON: {response.text[:200]!r}",
                status_code=status,
            ) from exc
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _TransientError(
                f"HTTP {status} without choices: {response.text[:200]!r}", status_code=status
            )
        choice = choices[0]
        message = choice.get("message")
        text = _content_text(message.get("content")) if isinstance(message, dict) else None
        if text is None:
            raise _TransientError(
                f"HTTP {status} with an unreadable message: {response.text[:200]!r}",
                status_code=status,
            )
        usage = body.get("usage")
        finish_reason = choice.get("finish_reason")
        model = body.get("model")
        return LLMResponse(
            text=text,
            model=model if isinstance(model, str) and model else self._model,
            prompt_tokens=_token_count(usage, "prompt_tokens"),
            completion_tokens=_token_count(usage, "completion_tokens"),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )
