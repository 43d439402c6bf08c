"""ASGI guards in front of the routes: rate limit, body size limit and the MCP endpoint's auth."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from fastapi.responses import JSONResponse

from memvault.errors import MemoryError, MemoryRateLimitError
from memvault.server.errors import error_code, error_status, public_message
from memvault.server.rest.auth import Authenticator
from memvault.server.state import TokenBucket

if TYPE_CHECKING:
    from memvault.server.state import ServerState

logger = logging.getLogger("memvault.server.rest")

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "LOCAL_HOSTS",
    "RATE_LIMIT_EXEMPT",
    "BodyLimit",
    "McpEndpoint",
    "RateLimit",
    "TenantLimit",
    "TokenBucket",
    "declared_length",
    "error_response",
]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Host headers a server without API keys answers (loopback names only).
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """The one error body of every route: ``{"error": {"code", "message"}}``."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def declared_length(scope: MutableMapping[str, Any]) -> int | None:
    """The request's Content-Length, if it sent one (-1 when it is not a number)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return None


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope)
        if declared is not None and (declared < 0 or declared > self.limit):
            await self._reject(scope, receive, send)
            return
        if declared is not None:
            # The server (h11/httptools) never delivers more than the declared length.
            await self.app(scope, receive, send)
            return
        # A chunked body of unknown size: buffer it (at most ``limit`` bytes), then replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)
                return
            size += len(message.get("body", b""))
            if size > self.limit:
                await self._reject(scope, receive, send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _reject(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        msg = f"request body larger than {self.limit} bytes"
        await error_response(413, "payload_too_large", msg)(scope, receive, send)


#: Paths a rate limit never refuses: liveness probes and metrics scrapes must keep answering
#: while a client is being throttled.
RATE_LIMIT_EXEMPT = frozenset({"/health", "/metrics"})
#: Buckets kept per process before idle (full) ones are dropped: bounds the memory a stream of
#: distinct (possibly made-up) keys or addresses can take.
MAX_BUCKETS = 10_000


class RateLimit:
    """Refuse requests over ``rate``/s (bursts up to ``burst``) per caller with 429.

    The caller is the API key (a hash of its secret: one key, one bucket, without asking the key
    store before the request is even admitted) or, for a request without a bearer key, the
    client address. By default the buckets live in this process: under ``serve --workers N``
    (or N servers) each keeps its own, so the effective limit is N times the rate. With
    ``shared`` (``serve --shared-rate-limit``) every bucket lives in the store's shared server
    state instead (one upsert per request), so the limit holds across every instance; if that
    state cannot be reached the request is judged by this process's bucket (logged), never
    refused for it. ``/health`` and ``/metrics`` are exempt.

    ``clock`` gives the current time in seconds (default :func:`time.monotonic`); only
    differences between its readings count, so a test can pass a clock it advances by hand.
    """

    def __init__(
        self,
        app: ASGIApp,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        shared: ServerState | None = None,
    ) -> None:
        self.app = app
        self.rate = rate
        self.burst = float(max(1, burst))
        self.clock = clock
        self.shared = shared
        self.buckets: dict[str, TokenBucket] = {}

    @staticmethod
    def caller(scope: MutableMapping[str, Any]) -> str:
        """The bucket name of a request: ``key:<sha256 of the secret>`` or ``addr:<client>``."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, secret = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and secret.strip():
                    digest = hashlib.sha256(secret.strip().encode("latin-1")).hexdigest()
                    return f"key:{digest}"
                break
        client = scope.get("client")
        return f"addr:{client[0] if client else 'unknown'}"

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope.get("path") in RATE_LIMIT_EXEMPT:
            await self.app(scope, receive, send)
            return
        name = self.caller(scope)
        wait = await self._take(name)
        if wait <= 0.0:
            await self.app(scope, receive, send)
            return
        retry_after = max(1, math.ceil(wait))
        msg = f"rate limit of {self.rate:g} requests/s exceeded; retry in {retry_after} s"
        response = error_response(429, "rate_limited", msg)
        response.headers["Retry-After"] = str(retry_after)
        await response(scope, receive, send)

    async def _take(self, name: str) -> float:
        if self.shared is not None:
            try:
                return await self.shared.take_token(name, self.rate, self.burst)
            except MemoryError as exc:
                logger.warning("shared rate limit unavailable, using this process's: %s", exc)
        now = self.clock()
        bucket = self.buckets.get(name)
        if bucket is None:
            if len(self.buckets) >= MAX_BUCKETS:
                self._prune(now)
            bucket = self.buckets[name] = TokenBucket(self.rate, self.burst, now)
        return bucket.take(now)

    def _prune(self, now: float) -> None:
        # Full buckets carry no state (a new one starts full); if every bucket is in use the
        # oldest half goes, which at worst lets those callers burst once more.
        self.buckets = {k: b for k, b in self.buckets.items() if not b.full(now)}
        if len(self.buckets) >= MAX_BUCKETS:
            keep = sorted(self.buckets.items(), key=lambda kv: kv[1].stamp)[MAX_BUCKETS // 2 :]
            self.buckets = dict(keep)


class TenantLimit:
    """A request budget per tenant, taken after authentication (REST and MCP alike).

    Every tenant gets ``rate`` requests/s (bursts up to ``burst``) whatever its keys, so one
    noisy tenant cannot take the server's capacity from the others. The buckets live in
    ``state``: the store's shared server state (one limit across every instance) or, by
    default, this process.
    """

    def __init__(self, rate: float, burst: int, state: ServerState | None = None) -> None:
        from memvault.server.state import InMemoryServerState

        self.rate = rate
        self.burst = float(max(1, burst))
        self.state: ServerState = state if state is not None else InMemoryServerState()

    async def __call__(self, tenant: str) -> None:
        """Take one request of ``tenant``'s budget.

        Raises:
            MemoryRateLimitError: the tenant's budget is spent (``retry_after`` seconds).
        """
        try:
            wait = await self.state.take_token(f"tenant:{tenant}", self.rate, self.burst)
        except MemoryError as exc:  # the limit must not take the service down with it
            logger.warning("tenant rate limit unavailable: %s", exc)
            return
        if wait > 0.0:
            msg = f"tenant {tenant!r} is over its limit of {self.rate:g} requests/s"
            raise MemoryRateLimitError(msg, retry_after=wait)


class McpEndpoint:
    """MCP's streamable-HTTP app behind the same API keys as the REST routes.

    The authenticated actor goes into the ASGI scope, where the MCP tools read it.
    """

    def __init__(self, app: Any, auth: Authenticator) -> None:
        self.app = app
        self.auth = auth

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        raw = dict(scope.get("headers", ())).get(b"authorization")
        try:
            scope["memvault.actor"] = await self.auth(raw.decode("latin-1") if raw else None)
        except MemoryError as exc:
            await error_response(error_status(exc), error_code(exc), public_message(exc))(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)
