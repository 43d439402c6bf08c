"""The exception handlers every router shares: one error body, statuses from one table."""

from __future__ import annotations

import logging
import math

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memvault.errors import MemoryError, MemoryRateLimitError
from memvault.server.errors import error_code, error_status, public_message
from memvault.server.rest.guards import error_response

__all__ = ["install_error_handlers"]

logger = logging.getLogger("memvault.server.rest")

RETRY_AFTER_SECONDS = 2
"""The Retry-After of a 503 (store unavailable: unreachable, disk full, read-only)."""


def install_error_handlers(app: FastAPI) -> None:
    """Answer every failure with ``{"error": {"code", "message"}}``, never a traceback."""

    @app.exception_handler(MemoryError)
    async def memvault_error(_: Request, exc: MemoryError) -> JSONResponse:
        status = error_status(exc)
        if status >= 500 and status != 501:
            logger.error("request.failed", exc_info=exc)
        response = error_response(status, error_code(exc), public_message(exc))
        if status == 503:
            # The store is down, full or read-only for now: nothing was written, and the same
            # request may succeed once the fault is gone.
            response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        elif isinstance(exc, MemoryRateLimitError):
            response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
        return response

    @app.exception_handler(OverflowError)
    @app.exception_handler(UnicodeError)
    async def unrepresentable(_: Request, exc: Exception) -> JSONResponse:
        # Valid JSON the store cannot hold: dates at the edge of the calendar that overflow
        # once shifted to UTC, lone surrogates that cannot be encoded.
        logger.info("request.unrepresentable", extra={"error": str(exc)})
        msg = "a value cannot be stored (a date out of range or text that is not valid Unicode)"
        return error_response(422, "validation_error", msg)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else err.get("msg", ""))
        return error_response(422, "validation_error", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.error("request.crashed", exc_info=exc)
        return error_response(500, "internal_error", "internal server error")
