"""``create_app``: the REST app, assembled from the routers, guards and error handlers."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import PlainTextResponse
from starlette.routing import Route

from memvault._version import __version__
from memvault.api.operations import OPERATIONS, Operation
from memvault.api.responses import ErrorOut
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.server.metrics import Metrics, MetricsMiddleware
from memvault.server.rest.auth import Authenticator, Caller
from memvault.server.rest.errors import install_error_handlers
from memvault.server.rest.guards import (
    DEFAULT_MAX_BODY_BYTES,
    LOCAL_HOSTS,
    BodyLimit,
    McpEndpoint,
    RateLimit,
    TenantLimit,
)
from memvault.server.rest.routes import operation_routers
from memvault.server.ui import mount_ui
from memvault.service import MemoryService

if TYPE_CHECKING:
    from memvault.server.keys import KeyStore
    from memvault.server.state import ServerState

__all__ = ["ServerSettings", "create_app"]

logger = logging.getLogger("memvault.server.rest")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How the app guards itself: body size limit, rate limit, CORS origins, whether MCP is mounted.

    ``rate_limit`` (requests/s per API key, or per client address for requests without a key;
    ``None``: no limit) with bursts of up to ``rate_burst`` requests (``None``: twice the rate,
    at least 1) answers 429 with ``Retry-After``. The limit is kept per server process unless
    ``shared_rate_limit``: then in the app's shared server state, one limit across every
    instance over the store. ``tenant_rate_limit`` (requests/s per tenant, bursts of
    ``tenant_rate_burst``, default twice the rate) caps each tenant after authentication, in the
    shared state too when ``shared_rate_limit``.
    ``clock`` is the time in seconds the rate limit refills its buckets by and the API-key cache
    expires by (default :func:`time.monotonic`; a test passes a clock it advances instead of
    sleeping).
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cors_origins: tuple[str, ...] = ()
    mount_mcp: bool = True
    rate_limit: float | None = None
    rate_burst: int | None = None
    shared_rate_limit: bool = False
    tenant_rate_limit: float | None = None
    tenant_rate_burst: int | None = None
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        # A negative or NaN rate would otherwise switch the limit off without a word.
        if self.rate_limit is not None and not 0 < self.rate_limit < math.inf:
            msg = f"rate_limit must be a positive number of requests/s, got {self.rate_limit}"
            raise MemoryValidationError(msg)
        if self.rate_burst is not None and self.rate_burst < 1:
            msg = f"rate_burst must be at least 1, got {self.rate_burst}"
            raise MemoryValidationError(msg)
        if self.tenant_rate_limit is not None and not 0 < self.tenant_rate_limit < math.inf:
            msg = (
                "tenant_rate_limit must be a positive number of requests/s, got "
                f"{self.tenant_rate_limit}"
            )
            raise MemoryValidationError(msg)
        if self.tenant_rate_burst is not None and self.tenant_rate_burst < 1:
            msg = f"tenant_rate_burst must be at least 1, got {self.tenant_rate_burst}"
            raise MemoryValidationError(msg)

    @property
    def burst(self) -> int:
        """The bucket size the rate limit uses."""
        if self.rate_burst is not None:
            return self.rate_burst
        return max(1, math.ceil(2 * (self.rate_limit or 0)))

    @property
    def tenant_burst(self) -> int:
        """The bucket size of the per-tenant limit."""
        if self.tenant_rate_burst is not None:
            return self.tenant_rate_burst
        return max(1, math.ceil(2 * (self.tenant_rate_limit or 0)))


def _ops_router(metrics: Metrics) -> APIRouter:
    """Liveness and Prometheus metrics."""
    router = APIRouter(tags=["ops"])

    @router.get("/health", summary="Liveness: the server answers")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @router.get(
        "/metrics",
        summary="Prometheus metrics (text exposition format)",
        response_class=PlainTextResponse,
    )
    async def metrics_text(actor: Caller) -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return router


def create_app(
    service: MemoryService,
    *,
    keys: KeyStore | None,
    settings: ServerSettings | None = None,
    operations: Iterable[Operation] = OPERATIONS,
    state: ServerState | None = None,
) -> FastAPI:
    """The REST app over ``service``: a route per operation of ``operations``.

    ``keys=None`` disables authentication: every request acts as the local admin of the default
    tenant (only for local use; ``memvault serve`` allows it on loopback only). ``state`` is
    the server state every instance over the store shares (dashboard sessions, shared rate
    limits; :func:`~memvault.server.state.open_server_state`); without it that state is kept
    in this process, and the app closes it when it stops.

    Raises:
        MemoryConfigError: ``settings.shared_rate_limit`` without a ``state`` to share.
    """
    conf = settings or ServerSettings()
    ops = tuple(operations)
    if conf.shared_rate_limit and state is None:
        msg = "a shared rate limit needs the server state of the store (state=...)"
        raise MemoryConfigError(msg)
    shared = state if conf.shared_rate_limit else None
    tenant_limit = (
        None
        if conf.tenant_rate_limit is None
        else TenantLimit(conf.tenant_rate_limit, conf.tenant_burst, shared)
    )
    auth = Authenticator(keys, clock=conf.clock, tenant_limit=tenant_limit)
    metrics = Metrics()
    mcp_http: Any = None
    if conf.mount_mcp:
        try:
            from memvault.server.mcp import create_mcp_http_app
        except ImportError:  # the mcp extra is not installed: REST only
            logger.info("mcp.http.disabled", extra={"reason": "mcp package not installed"})
        else:
            mcp_http = create_mcp_http_app(service, operations=ops)

    @asynccontextmanager
    async def lifespan(started: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_http is not None:
                await stack.enter_async_context(mcp_http.lifespan())
            # The maintenance scheduler ``memvault serve`` attaches (app.state) when
            # maintenance.enabled: one task for the app's life, stopped before the stores close.
            maintenance = getattr(started.state, "memvault_maintenance", None)
            stop = asyncio.Event()
            task = (
                None
                if maintenance is None
                else asyncio.create_task(maintenance.run_forever(stop), name="memvault-maintenance")
            )
            try:
                yield
            finally:
                if maintenance is not None and task is not None:
                    stop.set()
                    try:
                        # A pass in progress finishes (its steps are ordered so that none loses
                        # data); one that runs too long is cancelled.
                        await asyncio.wait_for(task, timeout=30)
                    except TimeoutError:
                        logger.warning("maintenance pass cancelled at shutdown")
                    except Exception:
                        logger.exception("maintenance task failed")
                    await maintenance.close()
                await service.close()
                if state is not None:
                    await state.close()
                if keys is not None:
                    await asyncio.to_thread(keys.close)

    app = FastAPI(
        title="memvault",
        version=__version__,
        summary="Durable, typed memory for LLM agents.",
        lifespan=lifespan,
        responses={
            401: {"model": ErrorOut, "description": "Missing or invalid API key"},
            403: {"model": ErrorOut, "description": "Not allowed for this key"},
            422: {"model": ErrorOut, "description": "Invalid input"},
        },
    )
    app.state.memvault_auth = auth
    install_error_handlers(app)
    app.include_router(_ops_router(metrics))
    for router in operation_routers(service, ops):
        app.include_router(router)
    mount_ui(app, service, metrics=metrics, open_access=keys is None, state=state)

    if mcp_http is not None:
        # A Route, not a Mount: "/mcp" itself answers (a mount would redirect it to "/mcp/").
        endpoint = McpEndpoint(mcp_http.app, auth)
        app.router.routes.append(Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"]))

    # -- middleware (outermost last) ------------------------------------------------------------
    if conf.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(conf.cors_origins),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(BodyLimit, limit=conf.max_body_bytes)
    if conf.rate_limit is not None:
        # Outside the body limit: a throttled caller is refused before its body is read.
        app.add_middleware(
            RateLimit,
            rate=conf.rate_limit,
            burst=conf.burst,
            clock=conf.clock,
            shared=shared,
        )
    if keys is None:
        # Without keys the server trusts whoever can reach it, which --no-auth limits to this
        # machine; a Host check stops web pages from reaching it through DNS rebinding.
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS))
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
