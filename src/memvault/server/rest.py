"""The REST API: FastAPI routes under ``/v1`` over :class:`~memvault.service.MemoryService`.

``create_app(service, keys=...)`` builds the ASGI app; ``memvault serve`` runs it with uvicorn.
Every request except ``/health`` needs ``Authorization: Bearer <key>`` (keys from
``memvault keys create``) unless the app is built with ``keys=None`` (``serve --no-auth``, which
the CLI allows on loopback only). A key names its tenant, so a request reaches that tenant's
store and nothing else; a key bound to an agent acts as that agent.

Errors always have the body ``{"error": {"code", "message"}}`` with the status from the one
table in :mod:`memvault.server.errors`; unexpected failures are logged and answered with a
generic 500, never a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

import memvault
from memvault.errors import MemoryAuthenticationError, MemoryError, MemoryNotFoundError
from memvault.models import MemoryCategory, MemoryEntry
from memvault.server.errors import error_code, error_status, public_message
from memvault.server.metrics import Metrics, MetricsMiddleware
from memvault.server.schemas import (
    AddBody,
    AddManyBody,
    AgentsOut,
    ArchiveBody,
    ArchivedOut,
    ArchiveOut,
    AuditOut,
    ConsolidateBody,
    ContextBody,
    ContextOut,
    CountOut,
    DeletedOut,
    EntriesOut,
    EntryOut,
    ErrorOut,
    IdOut,
    IdsOut,
    ImportBody,
    ImportOut,
    MemoriesOut,
    PublishBody,
    RestoreBody,
    RetractedOut,
    SearchBody,
    SessionBody,
    SessionOut,
    SessionsOut,
    SharedSearchBody,
    StoredOut,
    SweepBody,
    SweepOut,
)
from memvault.service import DEFAULT_TENANT, Actor, ActorKind, MemoryService, Scope
from memvault.sessions import SessionRecord

if TYPE_CHECKING:
    from memvault.server.keys import ApiKey, KeyStore

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerSettings", "actor_for_key", "create_app"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Host headers a server without API keys answers (loopback names only).
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")
# How long an authenticated key is trusted without asking the key store again: revocation
# takes effect within this many seconds, and a busy server does not hit the store per request.
KEY_CACHE_SECONDS = 5.0

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How the app guards itself: body size limit, CORS origins, whether MCP is mounted."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cors_origins: tuple[str, ...] = ()
    mount_mcp: bool = True


def actor_for_key(key: ApiKey) -> Actor:
    """The actor an API key acts as: its agent, or (unbound) a human/admin of its tenant."""
    scopes = list(key.scopes)
    if key.agent_id is not None:
        return Actor.agent(key.agent_id, tenant=key.tenant, scopes=scopes)
    if Scope.ADMIN in scopes:
        return Actor(ActorKind.ADMIN, key.name, key.tenant, frozenset(scopes))
    return Actor.human(key.name, tenant=key.tenant, scopes=scopes)


class _Authenticator:
    """Bearer key -> Actor, with a short cache in front of the key store."""

    def __init__(self, keys: KeyStore | None) -> None:
        self._keys = keys
        self._cache: dict[str, tuple[float, Actor]] = {}
        self._local = Actor.admin("local", tenant=DEFAULT_TENANT)

    async def __call__(self, header: str | None) -> Actor:
        if self._keys is None:
            return self._local
        if not header:
            msg = "missing API key: send 'Authorization: Bearer <key>'"
            raise MemoryAuthenticationError(msg)
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            msg = "malformed Authorization header: expected 'Bearer <key>'"
            raise MemoryAuthenticationError(msg)
        digest = hashlib.sha256(secret.strip().encode("utf-8", "replace")).hexdigest()
        now = time.monotonic()
        hit = self._cache.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        key = await asyncio.to_thread(self._keys.authenticate, secret.strip())
        if key is None:
            self._cache.pop(digest, None)
            msg = "invalid or revoked API key"
            raise MemoryAuthenticationError(msg)
        actor = actor_for_key(key)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now + KEY_CACHE_SECONDS, actor)
        return actor


_bearer = HTTPBearer(auto_error=False, description="An API key from `memvault keys create`.")


async def _current_actor(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Actor:
    """The authenticated caller (FastAPI dependency); also left in the ASGI scope."""
    auth: _Authenticator = request.app.state.memvault_auth
    actor = await auth(request.headers.get("authorization"))
    request.scope["memvault.actor"] = actor
    return actor


Caller = Annotated[Actor, Depends(_current_actor)]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _entry(entry: MemoryEntry) -> dict[str, Any]:
    return entry.to_json()


def _session(record: SessionRecord, *, messages: bool) -> SessionOut:
    return SessionOut(
        session_id=record.session_id,
        agent_id=record.agent_id,
        created_at=record.created_at,
        updated_at=record.updated_at,
        message_count=record.message_count,
        messages=(
            [m.model_dump(mode="json", exclude_none=True) for m in record.messages]
            if messages
            else None
        ),
    )


class _BodyLimit:
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
        await _error(413, "payload_too_large", msg)(scope, receive, send)


class _McpEndpoint:
    """MCP's streamable-HTTP app behind the same API keys as the REST routes.

    The authenticated actor goes into the ASGI scope, where the MCP tools read it.
    """

    def __init__(self, app: Any, auth: _Authenticator) -> None:
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
            await _error(error_status(exc), error_code(exc), public_message(exc))(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


def declared_length(scope: MutableMapping[str, Any]) -> int | None:
    """The request's Content-Length, if it sent one (-1 when it is not a number)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return None


def create_app(
    service: MemoryService,
    *,
    keys: KeyStore | None,
    settings: ServerSettings | None = None,
) -> FastAPI:
    """The REST app over ``service``.

    ``keys=None`` disables authentication: every request acts as the local admin of the default
    tenant (only for local use; ``memvault serve`` allows it on loopback only).
    """
    conf = settings or ServerSettings()
    auth = _Authenticator(keys)
    metrics = Metrics()
    mcp_http: Any = None
    if conf.mount_mcp:
        try:
            from memvault.server.mcp import create_mcp_http_app
        except ImportError:  # the mcp extra is not installed: REST only
            logger.info("mcp.http.disabled", extra={"reason": "mcp package not installed"})
        else:
            mcp_http = create_mcp_http_app(service)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_http is not None:
                await stack.enter_async_context(mcp_http.lifespan())
            try:
                yield
            finally:
                await service.close()
                if keys is not None:
                    await asyncio.to_thread(keys.close)

    app = FastAPI(
        title="memvault",
        version=memvault.__version__,
        summary="Durable, typed memory for LLM agents.",
        lifespan=lifespan,
        responses={
            401: {"model": ErrorOut, "description": "Missing or invalid API key"},
            403: {"model": ErrorOut, "description": "Not allowed for this key"},
            422: {"model": ErrorOut, "description": "Invalid input"},
        },
    )
    app.state.memvault_auth = auth

    # -- errors ---------------------------------------------------------------------------------

    @app.exception_handler(MemoryError)
    async def memvault_error(_: Request, exc: MemoryError) -> JSONResponse:
        status = error_status(exc)
        if status >= 500 and status != 501:
            logger.error("request.failed", exc_info=exc)
        return _error(status, error_code(exc), public_message(exc))

    @app.exception_handler(OverflowError)
    @app.exception_handler(UnicodeError)
    async def unrepresentable(_: Request, exc: Exception) -> JSONResponse:
        # Valid JSON the store cannot hold: dates at the edge of the calendar that overflow
        # once shifted to UTC, lone surrogates that cannot be encoded.
        logger.info("request.unrepresentable", extra={"error": str(exc)})
        msg = "a value cannot be stored (a date out of range or text that is not valid Unicode)"
        return _error(422, "validation_error", msg)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else err.get("msg", ""))
        return _error(422, "validation_error", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.error("request.crashed", exc_info=exc)
        return _error(500, "internal_error", "internal server error")

    # -- health and metrics ---------------------------------------------------------------------

    @app.get("/health", tags=["ops"], summary="Liveness: the server answers")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": memvault.__version__}

    @app.get(
        "/metrics",
        tags=["ops"],
        summary="Prometheus metrics (text exposition format)",
        response_class=PlainTextResponse,
    )
    async def metrics_text(actor: Caller) -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    # -- memories -------------------------------------------------------------------------------

    @app.post(
        "/v1/memories", status_code=201, response_model=StoredOut, tags=["memories"],
        summary="Store a memory",
    )  # fmt: skip
    async def add(body: AddBody, actor: Caller) -> StoredOut:
        out = await service.store(
            actor,
            body.content,
            agent_id=body.agent_id,
            category=body.category,
            tags=body.tags,
            metadata=body.metadata,
            created_at=body.created_at,
            expires_at=body.expires_at,
            supersedes=body.supersedes,
            label=body.label,
            source=body.source,
            importance=body.importance,
            dedup=body.dedup,
            admission=body.admission,
        )
        return StoredOut(
            id=out.id,
            decision=out.decision.kind.value,
            reason=out.decision.reason,
            detail=out.decision.model_dump(mode="json"),
        )

    @app.post(
        "/v1/memories/batch", status_code=201, response_model=IdsOut, tags=["memories"],
        summary="Store many memories in one transaction",
    )  # fmt: skip
    async def add_many(body: AddManyBody, actor: Caller) -> IdsOut:
        items = [item.model_dump(exclude_none=True) for item in body.items]
        ids = await service.store_many(actor, items, agent_id=body.agent_id, dedup=body.dedup)
        return IdsOut(ids=ids)

    @app.get(
        "/v1/memories", response_model=MemoriesOut, tags=["memories"],
        summary="List an agent's memories, newest first",
    )  # fmt: skip
    async def list_memories(
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        category: MemoryCategory | None = None,
        label: Annotated[str | None, Query(max_length=200)] = None,
        tags: Annotated[list[str] | None, Query(max_length=64)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
        include_superseded: bool = False,
    ) -> dict[str, Any]:
        found = await service.list(
            actor,
            agent_id=agent_id,
            category=category,
            label=label,
            tags=tags,
            limit=limit,
            offset=offset,
            include_superseded=include_superseded,
        )
        return {"memories": [_entry(e) for e in found]}

    @app.delete(
        "/v1/memories", response_model=DeletedOut, tags=["memories"],
        summary="Delete all of an agent's memories (admin)",
    )  # fmt: skip
    async def clear(
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        category: MemoryCategory | None = None,
        reason: Annotated[str | None, Query(max_length=500)] = None,
    ) -> DeletedOut:
        n = await service.clear(actor, agent_id=agent_id, category=category, reason=reason)
        return DeletedOut(deleted=n)

    @app.get(
        "/v1/memories/{memory_id}", response_model=EntryOut, tags=["memories"],
        summary="Get one memory", responses={404: {"model": ErrorOut}},
    )  # fmt: skip
    async def get(
        memory_id: str, actor: Caller, agent_id: Annotated[str, Query(min_length=1, max_length=200)]
    ) -> dict[str, Any]:
        return _entry(await service.get(actor, memory_id, agent_id=agent_id))

    @app.delete(
        "/v1/memories/{memory_id}", response_model=DeletedOut, tags=["memories"],
        summary="Delete one memory (audited)", responses={404: {"model": ErrorOut}},
    )  # fmt: skip
    async def delete(
        memory_id: str,
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        reason: Annotated[str | None, Query(max_length=500)] = None,
    ) -> DeletedOut:
        if not await service.delete(actor, memory_id, agent_id=agent_id, reason=reason):
            msg = f"memory {memory_id} not found for agent {agent_id!r}"
            raise MemoryNotFoundError(msg)
        return DeletedOut(deleted=1)

    @app.get(
        "/v1/count", response_model=CountOut, tags=["memories"],
        summary="Count an agent's memories",
    )  # fmt: skip
    async def count(
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        category: MemoryCategory | None = None,
    ) -> CountOut:
        return CountOut(count=await service.count(actor, agent_id=agent_id, category=category))

    @app.post(
        "/v1/search", response_model=EntriesOut, tags=["retrieval"],
        summary="Hybrid search of an agent's memories",
    )  # fmt: skip
    async def search(body: SearchBody, actor: Caller) -> JSONResponse:
        found = await service.search(
            actor,
            body.query,
            agent_id=body.agent_id,
            limit=body.limit,
            categories=body.categories,
            tags=body.tags,
            since=body.since,
            until=body.until,
            as_of=body.as_of,
            include_shared=body.include_shared,
            include_superseded=body.include_superseded,
            min_relevance=body.min_relevance,
            explain=body.explain,
        )
        # The hot path: entries are already validated models, so they are sent as they are
        # (the response model still documents the shape) instead of being validated again.
        return JSONResponse({"results": [_entry(e) for e in found]})

    @app.post(
        "/v1/context", response_model=ContextOut, tags=["retrieval"],
        summary="Relevant memories packed into a token budget",
    )  # fmt: skip
    async def context(body: ContextBody, actor: Caller) -> dict[str, Any]:
        ctx = await service.context(
            actor,
            body.query,
            agent_id=body.agent_id,
            token_budget=body.token_budget,
            limit=body.limit,
            categories=body.categories,
            role=body.role,
            mmr=body.mmr,
            min_relevance=body.min_relevance,
        )
        return {
            "text": ctx.text,
            "tokens": ctx.tokens,
            "role": ctx.role,
            "messages": list(ctx.messages),
            "entries": [_entry(e) for e in ctx.entries],
        }

    # -- bulk and lifecycle ---------------------------------------------------------------------

    @app.get(
        "/v1/export", response_model=MemoriesOut, tags=["bulk"],
        summary="Export memories (one agent: read; whole tenant: admin)",
    )  # fmt: skip
    async def export(
        actor: Caller, agent_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None
    ) -> dict[str, Any]:
        return {"memories": await service.export(actor, agent_id=agent_id)}

    @app.post(
        "/v1/import", response_model=ImportOut, tags=["bulk"],
        summary="Import exported memories (admin; idempotent)",
    )  # fmt: skip
    async def import_(body: ImportBody, actor: Caller) -> ImportOut:
        return ImportOut(added=await service.import_(actor, body.items, agent_id=body.agent_id))

    @app.post("/v1/consolidate", tags=["lifecycle"], summary="Consolidate an agent's memories")
    async def consolidate(body: ConsolidateBody, actor: Caller) -> dict[str, Any]:
        result = await service.consolidate(
            actor,
            agent_id=body.agent_id,
            strategy=body.strategy,
            dry_run=body.dry_run,
            reason=body.reason,
        )
        return result.model_dump(mode="json")

    @app.post(
        "/v1/sweep", response_model=SweepOut, tags=["lifecycle"],
        summary="Enforce retention now (admin)",
    )  # fmt: skip
    async def sweep(body: SweepBody, actor: Caller) -> SweepOut:
        report = await service.sweep(actor, agent_id=body.agent_id)
        return SweepOut(expired=report.expired, evicted=report.evicted)

    @app.get(
        "/v1/archive", response_model=ArchivedOut, tags=["lifecycle"],
        summary="An agent's archived memories",
    )  # fmt: skip
    async def archived(
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    ) -> dict[str, Any]:
        rows = await service.archived(actor, agent_id=agent_id, limit=limit, offset=offset)
        return {"archived": [r.model_dump(mode="json") for r in rows]}

    @app.post(
        "/v1/archive", response_model=ArchiveOut, tags=["lifecycle"],
        summary="Move memories to the archive (restorable by id)",
    )  # fmt: skip
    async def archive(body: ArchiveBody, actor: Caller) -> ArchiveOut:
        index = await service.archive(actor, body.ids, agent_id=body.agent_id, reason=body.reason)
        return ArchiveOut(index=index)

    @app.post(
        "/v1/archive/{memory_id}/restore", response_model=EntryOut, tags=["lifecycle"],
        summary="Restore an archived memory", responses={404: {"model": ErrorOut}},
    )  # fmt: skip
    async def restore(memory_id: str, body: RestoreBody, actor: Caller) -> dict[str, Any]:
        entry = await service.restore(actor, memory_id, agent_id=body.agent_id, reason=body.reason)
        return _entry(entry)

    @app.get(
        "/v1/audit", response_model=AuditOut, tags=["lifecycle"],
        summary="Audit records, oldest first (admin)",
    )  # fmt: skip
    async def audit(
        actor: Caller,
        agent_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        memory_id: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> dict[str, Any]:
        records = await service.audit(actor, agent_id=agent_id, memory_id=memory_id, limit=limit)
        return {"records": [r.model_dump(mode="json") for r in records]}

    @app.get("/v1/agents", response_model=AgentsOut, tags=["bulk"], summary="Agents with memories")
    async def agents(actor: Caller) -> AgentsOut:
        return AgentsOut(agents=await service.agents(actor))

    @app.get("/v1/stats", tags=["bulk"], summary="Counts of the tenant's store")
    async def stats(actor: Caller) -> dict[str, Any]:
        return (await service.stats(actor)).model_dump(mode="json")

    # -- shared knowledge -----------------------------------------------------------------------

    @app.post(
        "/v1/shared", status_code=201, response_model=IdOut, tags=["shared"],
        summary="Publish shared knowledge",
    )  # fmt: skip
    async def publish(body: PublishBody, actor: Caller) -> IdOut:
        mid = await service.publish(
            actor,
            body.content,
            agent_id=body.agent_id,
            category=body.category,
            tags=body.tags,
            metadata=body.metadata,
        )
        return IdOut(id=mid)

    @app.post(
        "/v1/shared/search", response_model=EntriesOut, tags=["shared"],
        summary="Search the tenant's shared knowledge",
    )  # fmt: skip
    async def search_shared(body: SharedSearchBody, actor: Caller) -> dict[str, Any]:
        found = await service.search_shared(
            actor, body.query, limit=body.limit, exclude_agent=body.exclude_agent
        )
        return {"results": [_entry(e) for e in found]}

    @app.delete(
        "/v1/shared/{memory_id}", response_model=RetractedOut, tags=["shared"],
        summary="Retract shared knowledge the agent published",
    )  # fmt: skip
    async def retract(
        memory_id: str,
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        reason: Annotated[str | None, Query(max_length=500)] = None,
    ) -> RetractedOut:
        done = await service.retract(actor, memory_id, agent_id=agent_id, reason=reason)
        return RetractedOut(retracted=done)

    # -- sessions -------------------------------------------------------------------------------

    @app.get(
        "/v1/sessions", response_model=SessionsOut, tags=["sessions"],
        summary="An agent's sessions, most recent first",
    )  # fmt: skip
    async def sessions(
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
        limit: Annotated[int | None, Query(ge=1, le=1000)] = None,
    ) -> SessionsOut:
        found = await service.sessions(actor, agent_id=agent_id, limit=limit)
        return SessionsOut(sessions=[_session(r, messages=False) for r in found])

    @app.get(
        "/v1/sessions/{session_id}", response_model=SessionOut, tags=["sessions"],
        summary="One session with its messages ('latest' for the most recent)",
        responses={404: {"model": ErrorOut}},
    )  # fmt: skip
    async def session(
        session_id: str,
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
    ) -> SessionOut:
        sid = None if session_id == "latest" else session_id
        record = await service.session(actor, sid, agent_id=agent_id)
        if record is None:
            msg = f"no session {session_id!r} for agent {agent_id!r}"
            raise MemoryNotFoundError(msg)
        return _session(record, messages=True)

    @app.put(
        "/v1/sessions/{session_id}", response_model=SessionOut, tags=["sessions"],
        summary="Save a session's message history",
    )  # fmt: skip
    async def save_session(session_id: str, body: SessionBody, actor: Caller) -> SessionOut:
        record = await service.save_session(
            actor, session_id, body.messages, agent_id=body.agent_id
        )
        return _session(record, messages=False)

    @app.delete(
        "/v1/sessions/{session_id}", response_model=DeletedOut, tags=["sessions"],
        summary="Delete one session", responses={404: {"model": ErrorOut}},
    )  # fmt: skip
    async def delete_session(
        session_id: str,
        actor: Caller,
        agent_id: Annotated[str, Query(min_length=1, max_length=200)],
    ) -> DeletedOut:
        if not await service.delete_session(actor, session_id, agent_id=agent_id):
            msg = f"no session {session_id!r} for agent {agent_id!r}"
            raise MemoryNotFoundError(msg)
        return DeletedOut(deleted=1)

    # -- MCP over streamable HTTP, behind the same keys -----------------------------------------

    if mcp_http is not None:
        # A Route, not a Mount: "/mcp" itself answers (a mount would redirect it to "/mcp/").
        endpoint = _McpEndpoint(mcp_http.app, auth)
        app.router.routes.append(Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"]))

    # -- middleware (outermost last) ------------------------------------------------------------

    if conf.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(conf.cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(_BodyLimit, limit=conf.max_body_bytes)
    if keys is None:
        # Without keys the server trusts whoever can reach it, which --no-auth limits to this
        # machine; a Host check stops web pages from reaching it through DNS rebinding.
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS))
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
