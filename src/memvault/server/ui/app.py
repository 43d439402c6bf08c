"""The dashboard's routes under ``/ui``: server-rendered pages over :class:`MemoryService`.

Every page authenticates the session's API key with the REST server's own authenticator and
then calls :meth:`MemoryService.call` with the resulting actor, exactly as a REST route does, so
the same scope, agent and tenant checks apply (a read key sees but cannot change; an agent key
reaches only its own agent; agent keys cannot approve). The forms shown are a convenience: the
server refuses what the actor may not do whether or not a button was shown.

Every response carries the security headers of :data:`SECURITY_HEADERS` (a CSP without inline
scripts or styles, ``frame-ancestors 'none'``); every POST must echo the session's CSRF token.
Templates autoescape every value: memory content is attacker-controlled text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from memvault._version import __version__
from memvault.api.auth import Actor, ActorKind, Scope
from memvault.errors import (
    MemoryAuthenticationError,
    MemoryError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.models import AuditRecord, MemoryCategory, MemoryEntry
from memvault.server.errors import error_status, public_message
from memvault.server.metrics import Metrics
from memvault.server.state import InMemoryServerState, ServerState
from memvault.server.ui import data, plots
from memvault.server.ui.sessions import (
    COOKIE_NAME,
    LOGIN_COOKIE,
    UiSession,
    login_token,
    login_token_ok,
)
from memvault.service import MemoryService

if TYPE_CHECKING:
    from memvault.server.rest.auth import Authenticator

__all__ = ["BENCH_REPORT_ENV", "SECURITY_HEADERS", "UI_PREFIX", "mount_ui"]

UI_PREFIX = "/ui"
#: A ``memvault bench ... --json`` output file the metrics page charts, when set.
BENCH_REPORT_ENV = "MEMVAULT_UI_BENCH_REPORT"
PAGE_SIZE = 50

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

_STATIC = {
    "htmx.min.js": "text/javascript; charset=utf-8",
    "ui.css": "text/css; charset=utf-8",
}


class _LoginRequired(Exception):
    """No logged-in session: the route answers with a redirect to the login page."""


@dataclass(slots=True)
class _Ui:
    """What every route shares."""

    service: MemoryService
    auth: Authenticator
    sessions: ServerState
    """Where logged-in sessions live (shared by every server instance over the store)."""
    env: Environment
    latency: data.LatencyHistory
    open_access: bool
    """True without API keys (``serve --no-auth``): every session acts as the local admin."""


@dataclass(slots=True)
class _Page:
    """One request's session, actor and helpers."""

    ui: _Ui
    request: Request
    session: UiSession
    actor: Actor

    @property
    def can_write(self) -> bool:
        return self.actor.allows(Scope.WRITE)

    @property
    def can_decide(self) -> bool:
        return self.can_write and self.actor.kind is not ActorKind.AGENT

    async def call(self, operation: str, request: Mapping[str, Any]) -> Any:
        return await self.ui.service.call(self.actor, operation, request)

    def render(self, template: str, *, status: int = 200, **values: Any) -> HTMLResponse:
        return _render(self.ui, template, self.session, self.actor, status=status, **values)


def _render(
    ui: _Ui,
    template: str,
    session: UiSession | None,
    actor: Actor | None,
    *,
    status: int = 200,
    **values: Any,
) -> HTMLResponse:
    page = ui.env.get_template(template).render(
        csrf=session.csrf if session is not None else "",
        csrf_header=json.dumps({"X-CSRF-Token": session.csrf if session is not None else ""}),
        actor=actor,
        can_write=actor is not None and actor.allows(Scope.WRITE),
        can_decide=actor is not None
        and actor.allows(Scope.WRITE)
        and actor.kind is not ActorKind.AGENT,
        open_access=ui.open_access,
        version=__version__,
        **values,
    )
    return HTMLResponse(page, status_code=status)


# -- formatting --------------------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(value: int | None) -> str:
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)  # pragma: no cover


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _query(base: Mapping[str, Any], **changes: Any) -> str:
    merged = {**base, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "", False)})


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("memvault.server.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["size"] = _size
    env.filters["score"] = _score
    env.globals["query"] = _query
    env.globals["categories"] = [c.value for c in MemoryCategory]
    return env


def _parse_time(value: str | None, field: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        msg = f"{field} must be a date or date and time (YYYY-MM-DD[THH:MM]), got {value!r}"
        raise MemoryValidationError(msg) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _int(value: str | None, field: str, default: int, lo: int, hi: int) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(str(value))
    except ValueError:
        msg = f"{field} must be an integer, got {value!r}"
        raise MemoryValidationError(msg) from None
    if not lo <= number <= hi:
        msg = f"{field} must be between {lo} and {hi}, got {number}"
        raise MemoryValidationError(msg)
    return number


def _tags(value: str | None) -> list[str] | None:
    if not value:
        return None
    found = [t.strip() for t in value.split(",") if t.strip()]
    return found or None


def _flag(value: str | None) -> bool:
    return value in ("1", "on", "true", "yes")


# -- the route class: headers, login redirects, HTML errors --------------------------------------


def _secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _route_class(ui_ref: list[_Ui]) -> type[APIRoute]:
    class UiRoute(APIRoute):
        """Answers failures with HTML (or a login redirect) and adds the security headers."""

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def run(request: Request) -> Response:
                ui = ui_ref[0]
                try:
                    response = await handler(request)
                except _LoginRequired:
                    response = _to_login(request)
                except MemoryAuthenticationError:
                    # The key was revoked (or never valid): forget the session, log in again.
                    await ui.sessions.drop_session(request.cookies.get(COOKIE_NAME))
                    response = _to_login(request)
                except (MemoryError, RequestValidationError) as exc:
                    if isinstance(exc, MemoryError):
                        status, message = error_status(exc), public_message(exc)
                    else:
                        status, message = 422, "invalid request parameters"
                    session = await ui.sessions.session(request.cookies.get(COOKIE_NAME))
                    response = _render(
                        ui, "error.html", session, None, status=status, status_code=status,
                        message=message,
                    )  # fmt: skip
                return _secure(response)

            return run

    return UiRoute


def _to_login(request: Request) -> Response:
    if request.headers.get("hx-request"):
        # htmx follows redirects inside the XHR; tell it to load the login page instead.
        return Response(status_code=204, headers={"HX-Redirect": f"{UI_PREFIX}/login"})
    return RedirectResponse(f"{UI_PREFIX}/login", status_code=303)


def _set_cookie(
    request: Request, response: Response, value: str, *, name: str = COOKIE_NAME
) -> None:
    response.set_cookie(
        name,
        value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=UI_PREFIX,
    )


# -- the router ------------------------------------------------------------------------------------


def mount_ui(
    app: FastAPI,
    service: MemoryService,
    *,
    metrics: Metrics | None = None,
    open_access: bool = False,
    state: ServerState | None = None,
) -> None:
    """Add the dashboard (pages under ``/ui``, static files under ``/ui/static``) to ``app``.

    Uses the app's authenticator (``app.state.memvault_auth``, set by
    :func:`~memvault.server.rest.create_app`) so the dashboard accepts exactly the REST keys.
    ``metrics`` (the app's request metrics) feeds the search-latency chart. ``open_access``
    says the app has no API keys (``serve --no-auth``): the login page then only opens a session
    (for its CSRF token) and every session acts as the local admin, as REST does.
    ``state`` keeps the logged-in sessions (default: in this process only; ``memvault serve``
    passes the store's shared state, :func:`~memvault.server.state.open_server_state`).
    """
    auth: Authenticator = app.state.memvault_auth
    ui = _Ui(
        service=service,
        auth=auth,
        sessions=state if state is not None else InMemoryServerState(),
        env=_environment(),
        latency=data.LatencyHistory(
            metrics,
            [("POST", "/v1/search"), ("GET", f"{UI_PREFIX}/agents/{{agent_id}}/search")],
        ),
        open_access=open_access,
    )
    app.state.memvault_ui = ui
    app.include_router(_router(ui))
    # Innermost middleware (create_app adds its own after this call): the security headers on
    # every answer under /ui, also the ones no UI route produced (404, 405, 413).
    app.add_middleware(_UiHeaders)


class _UiHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response to a path under ``/ui``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not (path == UI_PREFIX or path.startswith(UI_PREFIX + "/")):
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                for name, value in SECURITY_HEADERS.items():
                    if name.lower().encode() not in present:
                        headers.append((name.lower().encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)


def _router(ui: _Ui) -> APIRouter:
    router = APIRouter(prefix=UI_PREFIX, route_class=_route_class([ui]), include_in_schema=False)

    async def page(request: Request) -> _Page:
        ui.latency.sample()
        session = await ui.sessions.session(request.cookies.get(COOKIE_NAME))
        if session is None:
            raise _LoginRequired
        actor = await ui.auth.by_key_id(session.key_id)
        return _Page(ui, request, session, actor)

    async def posted(request: Request) -> tuple[_Page, Mapping[str, str]]:
        """The page of a POST whose CSRF token (form field or header) and origin check out."""
        current = await page(request)
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
            msg = "cross-origin form posts are refused"
            raise MemoryPermissionError(msg)
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        token = fields.get("csrf") or request.headers.get("x-csrf-token")
        if not current.session.csrf_ok(token):
            msg = "missing or stale form token: reload the page and try again"
            raise MemoryPermissionError(msg)
        return current, fields

    # -- static files and login -------------------------------------------------------------

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        media = _STATIC.get(name)
        if media is None:
            raise MemoryNotFoundError(f"no static file {name!r}")
        body = resources.files("memvault.server.ui").joinpath("static", name).read_bytes()
        return Response(body, media_type=media, headers={"Cache-Control": "public, max-age=3600"})

    @router.get("/login")
    async def login_form(request: Request) -> Response:
        # Nothing is stored before a login: the form's token is a double-submit cookie.
        token = request.cookies.get(LOGIN_COOKIE) or login_token()
        form = UiSession("", token, None)
        response = _render(ui, "login.html", form, None, error=None)
        _set_cookie(request, response, token, name=LOGIN_COOKIE)
        return response

    @router.post("/login")
    async def login(request: Request) -> Response:
        cookie = request.cookies.get(LOGIN_COOKIE)
        form = await request.form()
        token = form.get("csrf")
        if not login_token_ok(cookie, token if isinstance(token, str) else None):
            fresh = login_token()
            refused: Response = _render(
                ui, "login.html", UiSession("", fresh, None), None, status=403,
                error="The login form expired; please try again.",
            )  # fmt: skip
            _set_cookie(request, refused, fresh, name=LOGIN_COOKIE)
            return refused
        key = form.get("key")
        secret = key.strip() if isinstance(key, str) else ""
        try:
            key_id = None if ui.open_access else await ui.auth.key_id(secret)
        except MemoryAuthenticationError:
            return _render(
                ui, "login.html", UiSession("", str(cookie), None), None, status=401,
                error="Invalid or revoked API key.",
            )  # fmt: skip
        # A new session id at every login (no fixation); an earlier session of this browser ends.
        await ui.sessions.drop_session(request.cookies.get(COOKIE_NAME))
        opened = await ui.sessions.open_session(key_id)
        response = RedirectResponse(f"{UI_PREFIX}/", status_code=303)
        _set_cookie(request, response, opened.id)
        response.delete_cookie(LOGIN_COOKIE, path=UI_PREFIX)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        current, _ = await posted(request)
        await ui.sessions.drop_session(current.session.id)
        response = RedirectResponse(f"{UI_PREFIX}/login", status_code=303)
        response.delete_cookie(COOKIE_NAME, path=UI_PREFIX)
        return response

    # -- tenant overview ----------------------------------------------------------------------

    @router.get("")
    async def root() -> Response:
        return RedirectResponse(f"{UI_PREFIX}/", status_code=307)

    @router.get("/")
    async def overview(request: Request) -> Response:
        p = await page(request)
        agents: list[str] = await p.call("agents", {})
        counts: dict[str, int] = {}
        for agent in agents[:200]:
            counts[agent] = await p.call("count", {"agent_id": agent})
        stats = None
        by_category: dict[str, int] = {}
        if p.actor.kind is ActorKind.AGENT:
            for category in MemoryCategory:
                n = await p.call("count", {"agent_id": p.actor.name, "category": category.value})
                if n:
                    by_category[category.value] = n
        else:
            stats = await p.call("stats", {})
            by_category = dict(stats.by_category)
        # The last maintenance run scans the audit log: loaded after the page (htmx), so the
        # overview renders at once however long the log is.
        maintenance = None
        if request.query_params.get("maintenance") == "1":
            maintenance = await _last_maintenance(p)
        return p.render(
            "overview.html",
            agents=agents,
            counts=counts,
            stats=stats,
            by_category=by_category,
            model=(stats.embedding_model if stats is not None else None)
            or ui.service.config.embedder,
            maintenance=maintenance,
        )

    # -- one agent -------------------------------------------------------------------------------

    @router.get("/fragments/maintenance")
    async def maintenance_fragment(request: Request) -> Response:
        p = await page(request)
        return HTMLResponse(
            ui.env.from_string("{{ text }}").render(text=await _last_maintenance(p))
        )

    @router.get("/agents/{agent_id}")
    async def agent_view(request: Request, agent_id: str) -> Response:
        p = await page(request)
        q = request.query_params
        if _flag(q.get("archived")):
            return RedirectResponse(f"{UI_PREFIX}/agents/{agent_id}/archive", status_code=303)
        category = q.get("category") or None
        tags = _tags(q.get("tags"))
        since = _parse_time(q.get("since"), "since")
        until = _parse_time(q.get("until"), "until")
        superseded = _flag(q.get("superseded"))
        offset = _int(q.get("offset"), "offset", 0, 0, 10_000_000)
        base: dict[str, Any] = {
            "agent_id": agent_id,
            "category": category,
            "tags": tags,
            "include_superseded": superseded,
        }
        scanned = False
        if since is None and until is None:
            entries: list[MemoryEntry] = await p.call(
                "list", {**base, "limit": PAGE_SIZE + 1, "offset": offset}
            )
            more = len(entries) > PAGE_SIZE
            entries = entries[:PAGE_SIZE]
        else:
            entries, more = await _time_range(p, base, since, until, offset)
            scanned = True
        total = None
        if tags is None:
            total = await p.call("count", {"agent_id": agent_id, "category": category})
        filters = {
            "category": category,
            "tags": q.get("tags") or None,
            "since": q.get("since") or None,
            "until": q.get("until") or None,
            "superseded": "1" if superseded else None,
        }
        return p.render(
            "agent.html",
            agent_id=agent_id,
            entries=entries,
            filters=filters,
            offset=offset,
            more=more,
            page_size=PAGE_SIZE,
            total=total,
            scanned=scanned,
        )

    @router.get("/agents/{agent_id}/search")
    async def search(request: Request, agent_id: str) -> Response:
        p = await page(request)
        q = request.query_params
        text = (q.get("q") or "").strip()
        # Explanations are on by default; a submitted form says what its checkbox says.
        explain = _flag(q.get("explain")) if "submitted" in q else True
        results: list[MemoryEntry] = []
        category = q.get("category") or None
        if text:
            results = await p.call(
                "search",
                {
                    "agent_id": agent_id,
                    "query": text,
                    "limit": _int(q.get("limit"), "limit", 10, 1, 100),
                    "categories": [category] if category else None,
                    "include_shared": _flag(q.get("shared")),
                    "include_superseded": _flag(q.get("superseded")),
                    "explain": explain,
                },
            )
        template = (
            "search_results.html"
            if request.headers.get("hx-request") and (request.headers.get("hx-target") == "results")
            else "search.html"
        )
        return p.render(
            template,
            agent_id=agent_id,
            text=text,
            results=results,
            explain=explain,
            category=category,
            shared=_flag(q.get("shared")),
            superseded=_flag(q.get("superseded")),
        )

    @router.get("/agents/{agent_id}/memories/{memory_id}")
    async def memory_detail(request: Request, agent_id: str, memory_id: str) -> Response:
        p = await page(request)
        history = await p.call("history", {"agent_id": agent_id, "memory_id": memory_id})
        versions = list(history.versions)
        current = next((v for v in versions if v.id == memory_id), None)
        if current is None:
            raise MemoryNotFoundError(f"memory {memory_id!r} not found")
        as_of = _parse_time(request.query_params.get("as_of"), "as_of")
        as_of_version = _version_at(versions, as_of) if as_of is not None else None
        return p.render(
            "memory.html",
            agent_id=agent_id,
            entry=current,
            versions=versions,
            audit=list(history.audit),
            as_of=as_of,
            as_of_text=request.query_params.get("as_of", ""),
            as_of_version=as_of_version,
        )

    @router.post("/agents/{agent_id}/memories/{memory_id}/delete")
    async def delete(request: Request, agent_id: str, memory_id: str) -> Response:
        p, form = await posted(request)
        reason = (form.get("reason") or "").strip()
        if not reason:
            msg = "deleting a memory needs a reason (it is audited)"
            raise MemoryValidationError(msg)
        await p.call("delete", {"agent_id": agent_id, "memory_id": memory_id, "reason": reason})
        return RedirectResponse(f"{UI_PREFIX}/agents/{agent_id}?deleted=1", status_code=303)

    @router.get("/agents/{agent_id}/archive")
    async def archive(request: Request, agent_id: str) -> Response:
        p = await page(request)
        offset = _int(request.query_params.get("offset"), "offset", 0, 0, 10_000_000)
        found = await p.call(
            "archived", {"agent_id": agent_id, "limit": PAGE_SIZE + 1, "offset": offset}
        )
        return p.render(
            "archive.html",
            agent_id=agent_id,
            archived=found[:PAGE_SIZE],
            more=len(found) > PAGE_SIZE,
            offset=offset,
            page_size=PAGE_SIZE,
            restored=request.query_params.get("restored"),
        )

    @router.post("/agents/{agent_id}/archive/{memory_id}/restore")
    async def restore(request: Request, agent_id: str, memory_id: str) -> Response:
        p, form = await posted(request)
        reason = (form.get("reason") or "").strip() or None
        entry = await p.call(
            "restore", {"agent_id": agent_id, "memory_id": memory_id, "reason": reason}
        )
        return RedirectResponse(
            f"{UI_PREFIX}/agents/{agent_id}/archive?{urlencode({'restored': entry.id})}",
            status_code=303,
        )

    @router.get("/agents/{agent_id}/sessions")
    async def sessions(request: Request, agent_id: str) -> Response:
        p = await page(request)
        found = await p.call("sessions", {"agent_id": agent_id, "limit": 200})
        return p.render("sessions.html", agent_id=agent_id, sessions=found)

    @router.get("/agents/{agent_id}/sessions/{session_id}")
    async def session_detail(request: Request, agent_id: str, session_id: str) -> Response:
        p = await page(request)
        record = await p.call("session", {"agent_id": agent_id, "session_id": session_id})
        if record is None:
            raise MemoryNotFoundError(f"session {session_id!r} not found")
        return p.render("session.html", agent_id=agent_id, record=record)

    @router.get("/agents/{agent_id}/charts")
    async def charts(request: Request, agent_id: str) -> Response:
        p = await page(request)
        everything = await data.all_entries(ui.service, p.actor, agent_id, include_superseded=True)
        live = [e for e in everything if e.superseded_by is None]
        memory = await ui.service.memory(p.actor.tenant)
        view = data.retention_view(live, memory.retention)
        # Duplicate and rejected writes are known only from the audit log (admin scope).
        audit: list[AuditRecord] = []
        if p.actor.allows(Scope.ADMIN) and p.actor.kind is not ActorKind.AGENT:
            audit = await p.call("audit", {"agent_id": agent_id, "limit": 10_000})
        labels, stacks = data.decisions_per_day(everything, audit)
        over_time = data.memories_over_time(live)
        return p.render(
            "charts.html",
            agent_id=agent_id,
            truncated=len(everything) >= data.CHART_SCAN_LIMIT,
            scanned=len(everything),
            over_time=plots.line_chart(
                over_time,
                title="Memories over time per category",
                x_label=lambda x: datetime.fromtimestamp(x, UTC).strftime("%Y-%m-%d"),
            ),
            decisions=plots.bar_chart(labels, stacks, title="Writes per day by decision"),
            retention=plots.histogram(
                view.scores,
                title="Retention-score distribution",
                marker=view.threshold,
                marker_label="eviction line",
            ),
            view=view,
        )

    # -- tenant-wide pages ----------------------------------------------------------------------

    @router.get("/shared")
    async def shared(request: Request) -> Response:
        p = await page(request)
        text = (request.query_params.get("q") or "").strip()
        results: list[MemoryEntry] = []
        org_hits: list[Any] = []
        if text:
            results = await p.call("search_shared", {"query": text, "limit": 20})
            org_hits = await p.call("org_search", {"query": text, "limit": 20})
        policies = await p.call("org_policies", {})
        skills = await p.call("skills", {})
        return p.render(
            "shared.html",
            text=text,
            results=results,
            org_hits=org_hits,
            policies=policies,
            skills=skills,
        )

    @router.get("/approvals")
    async def approvals(request: Request) -> Response:
        p = await page(request)
        status = request.query_params.get("status") or None
        items = await p.call("approvals", {"status": status, "limit": 200})
        return p.render(
            "approvals.html",
            items=items,
            shown=status,
            decided=request.query_params.get("decided"),
        )

    @router.post("/approvals/{item_id}/{decision}")
    async def decide(request: Request, item_id: str, decision: str) -> Response:
        p, form = await posted(request)
        if decision not in ("approve", "reject"):
            raise MemoryNotFoundError(f"no decision {decision!r}")
        reason = (form.get("reason") or "").strip() or None
        await p.call(decision, {"item_id": item_id, "reason": reason})
        return RedirectResponse(
            f"{UI_PREFIX}/approvals?{urlencode({'decided': item_id})}", status_code=303
        )

    @router.get("/operations")
    async def operations(request: Request) -> Response:
        # Seed 001's operational records: what model calls cost, the tasks, the agents at work.
        p = await page(request)
        raw_days = request.query_params.get("days") or "30"
        days = int(raw_days) if raw_days.isdigit() and 0 < int(raw_days) <= 3650 else 30
        since = datetime.now(UTC) - timedelta(days=days)
        window = {"since": since, "limit": 50}
        by_agent = await p.call("cost_summary", {"by": "agent", **window})
        by_model = await p.call("cost_summary", {"by": "model", **window})
        by_day = await p.call("cost_summary", {"by": "day", **window, "limit": 400})
        tasks = await p.call("tasks", {"limit": 200})
        states = await p.call("agent_states", {"active": True})
        daily = sorted(by_day, key=lambda g: g.group or "")
        chart = plots.bar_chart(
            [(g.group or "?")[5:] for g in daily],
            {
                "tokens in": [float(g.input_tokens) for g in daily],
                "tokens out": [float(g.output_tokens) for g in daily],
            },
            title=f"Model tokens per day (last {days} days)",
        )
        return p.render(
            "operations.html",
            days=days,
            by_agent=by_agent,
            by_model=by_model,
            chart=chart,
            total=sum(g.cost for g in by_agent),
            calls=sum(g.calls for g in by_agent),
            tasks=tasks,
            states=states,
        )

    @router.get("/metrics")
    async def metrics_page(request: Request) -> Response:
        p = await page(request)
        ui.latency.sample(force=True)
        bench = _bench_chart()
        chart = plots.line_chart(
            ui.latency.series(),
            title="Search latency over time (mean ms per interval)",
            x_label=lambda x: datetime.fromtimestamp(x, UTC).strftime("%H:%M:%S"),
        )
        fragment = request.headers.get("hx-target") == "chart-latency"
        template = "latency_chart.html" if fragment else "metrics.html"
        return p.render(
            template,
            latency=chart,
            totals=ui.latency.totals(),
            bench=bench,
            bench_env=BENCH_REPORT_ENV,
        )

    @router.get("/{rest:path}")
    async def not_found(rest: str) -> Response:
        # Unknown pages under /ui get the dashboard's HTML error page, not the API's JSON.
        raise MemoryNotFoundError(f"no dashboard page /ui/{rest}")

    return router


# -- helpers the routes share ----------------------------------------------------------------------


async def _time_range(
    p: _Page,
    base: Mapping[str, Any],
    since: datetime | None,
    until: datetime | None,
    offset: int,
) -> tuple[list[MemoryEntry], bool]:
    """One page of the memories created in ``[since, until]``: newest-first pages are scanned
    until they pass ``since`` (the list operation has no time filter of its own)."""
    matched: list[MemoryEntry] = []
    position = 0
    while position < data.CHART_SCAN_LIMIT:
        chunk: list[MemoryEntry] = await p.call("list", {**base, "limit": 500, "offset": position})
        position += len(chunk)
        for e in chunk:
            if until is not None and e.created_at > until:
                continue
            if since is not None and e.created_at < since:
                continue
            matched.append(e)
        if len(chunk) < 500 or len(matched) > offset + PAGE_SIZE:
            break
        if since is not None and chunk and chunk[-1].created_at < since:
            break
    window = matched[offset : offset + PAGE_SIZE + 1]
    return window[:PAGE_SIZE], len(window) > PAGE_SIZE


def _version_at(versions: list[MemoryEntry], moment: datetime) -> MemoryEntry | None:
    """The version that was current at ``moment`` (valid_from or created_at ≤ t < valid_to)."""
    for v in versions:
        start = v.valid_from or v.created_at
        end = v.valid_to
        if start <= moment and (end is None or moment < end):
            return v
    return None


_MAINTENANCE = ("memory.evict", "memory.expire", "memory.consolidate")


async def _last_maintenance(p: _Page) -> str:
    """When maintenance last archived something (evict, expire, consolidate), if visible."""
    if not p.actor.allows(Scope.ADMIN) or p.actor.kind is ActorKind.AGENT:
        return "visible to admin keys only"
    # The audit operation answers oldest first, at most 10,000 records, with no action filter:
    # the newest maintenance record among those is the best the public API can tell.
    records = await p.call("audit", {"limit": 10_000})
    found = [r for r in records if r.action in _MAINTENANCE]
    capped = " (within the oldest 10,000 audit records)" if len(records) >= 10_000 else ""
    if not found:
        return f"none recorded{capped}"
    last = max(found, key=lambda r: r.at)
    return f"{_when(last.at)} ({last.action.removeprefix('memory.')}){capped}"


def _bench_chart() -> Any:
    """The chart of a ``memvault bench --json`` report named by ``$MEMVAULT_UI_BENCH_REPORT``."""
    path = os.environ.get(BENCH_REPORT_ENV)
    if not path:
        return None
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        names = [str(n) for n in report.get("metrics", [])]
        key = next((k for k, v in report.items() if isinstance(v, list) and k != "metrics"), None)
        rows = [*(report.get(key) or []), report.get("overall") or {}] if key else []
        labels = [str(r.get("label") or r.get("key") or "overall") for r in rows]
        stacks = {n: [float((r.get("metrics") or {}).get(n) or 0.0) for r in rows] for n in names}
    except (OSError, ValueError, AttributeError, TypeError):
        return {"error": f"cannot read the benchmark report named by ${BENCH_REPORT_ENV}"}
    first = names[:1]
    title = f"{report.get('benchmark', 'benchmark')}: {', '.join(first)} per group"
    return {
        "title": title,
        "chart": plots.bar_chart(labels, {n: stacks[n] for n in first}, title=title),
        "report": report,
    }
