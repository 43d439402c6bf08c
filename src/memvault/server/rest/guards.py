"""ASGI guards in front of the routes: the body size limit and the MCP endpoint's auth."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse

from memvault.errors import MemoryError
from memvault.server.errors import error_code, error_status, public_message
from memvault.server.rest.auth import Authenticator

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "LOCAL_HOSTS",
    "BodyLimit",
    "McpEndpoint",
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
